package migrations

import (
	"io/fs"
	"slices"
	"testing"
)

// Both backends must reach the same logical schema version by the same
// steps: a SQLite migration without its PostgreSQL twin (or the reverse)
// would leave one backend at a schema the code no longer matches.
func TestPostgresMirrorsSQLite(t *testing.T) {
	sqlite, err := fs.Glob(FS, "*.sql")
	if err != nil {
		t.Fatal(err)
	}
	postgres, err := fs.Glob(PostgresFS, "*.sql")
	if err != nil {
		t.Fatal(err)
	}
	if len(sqlite) == 0 {
		t.Fatal("no SQLite migrations embedded")
	}
	for _, name := range sqlite {
		if !slices.Contains(postgres, name) {
			t.Errorf("SQLite migration %s has no PostgreSQL counterpart migrations/postgres/%s (same number and name, same logical schema)", name, name)
		}
	}
	for _, name := range postgres {
		if !slices.Contains(sqlite, name) {
			t.Errorf("PostgreSQL migration postgres/%s has no SQLite counterpart %s", name, name)
		}
	}
}
