package pgstore

import (
	"context"

	"github.com/dsh-project/dsh/internal/backend"
)

// usageMigration creates session_usage; a catalog opened read-only may
// predate it.
const usageMigration = "session_usage"

// UsageOf implements backend.UsageReader as sqlstore.Core does, once the
// catalog is known to keep the totals: a read-only open accepts a catalog
// older than migration 0012, which must not read as "no usage".
func (s *Store) UsageOf(ctx context.Context, ids []string, fn func(backend.SessionUsage) error) error {
	if err := s.requireMigration(ctx, usageMigration, "read the token usage of", "token totals"); err != nil {
		return err
	}
	return s.Core.UsageOf(ctx, ids, fn)
}
