package pgstore

import (
	"context"
	"testing"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/pgtest"
)

// A catalog migrated before the usage totals existed, opened read-only
// (which does not migrate), says to run dsh init instead of failing on the
// missing table.
func TestUsageOfRefusesCatalogWithoutTotals(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	openT(t, url).Close()
	pgtest.Exec(t, url, `DROP TABLE session_usage CASCADE;
		DELETE FROM `+migrationsTable+` WHERE version >= (SELECT version FROM `+migrationsTable+` WHERE name = '`+usageMigration+`')`)
	s, err := OpenReadOnly(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	err = s.UsageOf(ctx, []string{"x"}, func(backend.SessionUsage) error {
		t.Error("usage read from a catalog without totals")
		return nil
	})
	wantStoreError(t, err, nil, "token totals need version", "run dsh init")
}
