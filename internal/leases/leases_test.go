package leases

import (
	"testing"
	"time"

	"github.com/dsh-project/dsh/internal/backend"
)

func TestNextExpiryIsTheEarliestLiveLease(t *testing.T) {
	now := time.UnixMilli(10_000)
	t1 := Table{Now: now.UnixMilli(), Rows: []Row{
		NewRow(backend.Lease{SessionID: "expired", ExpiresAt: 9_000}, now),
		NewRow(backend.Lease{SessionID: "late", ExpiresAt: 30_000}, now),
		NewRow(backend.Lease{SessionID: "soon", ExpiresAt: 12_500}, now),
		NewRow(backend.Lease{SessionID: "now", ExpiresAt: 10_000}, now),
	}}
	if d, ok := t1.NextExpiry(); !ok || d != 2500*time.Millisecond {
		t.Errorf("NextExpiry = %v, %v; want 2.5s, true", d, ok)
	}
	holders := t1.Holders()
	if len(holders) != 2 || holders["soon"].SessionID != "soon" || holders["late"].SessionID != "late" {
		t.Errorf("Holders = %v; want soon and late (a lease expiring at now is expired)", holders)
	}
	if _, ok := (Table{Now: now.UnixMilli(), Rows: t1.Rows[:1]}).NextExpiry(); ok {
		t.Error("NextExpiry with no live lease says one expires")
	}
}
