package sqlitepersist

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-project/dsh/internal/dsherr"
)

// A copy of the file without its -wal and -shm is opened immutable, which
// never sees another process's commit: the watch refuses it in one line
// rather than stay silent while the file changes.
func TestWatchChangesRefusesImmutableOpen(t *testing.T) {
	ctx := context.Background()
	s, path := openStore(t)
	if err := s.CreateSession(ctx, rootHeader("p"), nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	copied := filepath.Join(t.TempDir(), "copy.db")
	if err := os.WriteFile(copied, data, 0o600); err != nil {
		t.Fatal(err)
	}
	ro := openRO(t, copied)
	if !ro.immutable {
		t.Fatal("a copy without -wal and -shm was not opened immutable")
	}
	err = ro.WatchChanges(ctx, func() { t.Error("notify called on an immutable open") })
	if dsherr.CodeOf(err) != dsherr.StoreUnavailable || !strings.Contains(err.Error(), "opened immutable") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("WatchChanges on an immutable open = %v; want one STORE_UNAVAILABLE line saying it was opened immutable", err)
	}
}
