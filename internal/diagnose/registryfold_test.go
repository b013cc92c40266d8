package diagnose

import (
	"strings"
	"testing"

	"github.com/dsh-project/dsh/internal/gencorpus"
)

// A listing resolves a child from the registry fold recorded beside its log
// instead of reading the log, so a recorded fold that no longer matches the
// log is a wrong row: diagnose must report it, not pass the store as clean.
func TestRecordedRegistryFoldThatDisagreesIsCacheStale(t *testing.T) {
	s := newStore(t)
	if _, err := gencorpus.Generate(s.ctx, s.st, gencorpus.Spec{Children: 40, Sessions: 50, MinEvents: 10, MaxEvents: 20, Seed: 9}); err != nil {
		t.Fatal(err)
	}
	opts := Options{Select: Selection{HasParent: true, Parent: gencorpus.DefaultParent}}
	reports, _, err := s.audit(opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reports {
		if f := finding(r, CacheStale); f != nil {
			t.Fatalf("untouched corpus: %s has %s: %s", r.ID, CacheStale, f.Detail)
		}
	}
	var id, fold string
	if err := s.st.Querier().QueryRowContext(s.ctx, `SELECT id, registry_fold FROM sessions
		WHERE registry_fold LIKE '%"label"%' AND parent_session = ? ORDER BY id LIMIT 1`, gencorpus.DefaultParent).Scan(&id, &fold); err != nil {
		t.Fatal(err)
	}
	s.exec("UPDATE sessions SET registry_fold = ? WHERE id = ?", strings.Replace(fold, `"label":"`, `"label":"not `, 1), id)
	reports, sum, err := s.audit(opts)
	if err != nil {
		t.Fatal(err)
	}
	stale := 0
	for _, r := range reports {
		f := finding(r, CacheStale)
		if f == nil || !strings.Contains(f.Detail, "registry fold") {
			continue
		}
		stale++
		if r.ID != id || !strings.Contains(f.Detail, `\"label\":\"not `) {
			t.Errorf("%s: %s", r.ID, f.Detail)
		}
	}
	if stale != 1 {
		t.Fatalf("%d sessions report a disagreeing registry fold; want 1 (%s)", stale, id)
	}
	if sum.ByCode[CacheStale] == 0 || sum.BySeverity[Error] == 0 {
		t.Fatalf("summary %+v counts no error for a wrong recorded fold", sum)
	}
}
