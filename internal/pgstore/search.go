package pgstore

import (
	"context"

	"github.com/dsh-project/dsh/internal/backend"
)

// searchMigration creates the search index.
const searchMigration = "event_search"

// Search implements backend.SearchReader as sqlstore.Core does, once the
// catalog is known to keep the index (a read-only open accepts an older
// catalog, which must not read as "no match").
func (s *Store) Search(ctx context.Context, req backend.SearchRequest, fn func(backend.SearchHit) error) error {
	if err := s.requireMigration(ctx, searchMigration, "search", "search index"); err != nil {
		return err
	}
	return s.Core.Search(ctx, req, fn)
}
