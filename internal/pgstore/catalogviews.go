package pgstore

import (
	"context"

	"github.com/dsh-project/dsh/internal/backend"
)

// PutCatalogViews implements backend.CatalogViewWriter in three statements,
// whatever the number of views and entries: the views, their old entries
// dropped, their new entries, each travelling as arrays that unnest turns
// back into rows (the shared method's statements are a round trip per view
// and per entries chunk, a batch of imported sessions' a thousand).
func (s *Store) PutCatalogViews(ctx context.Context, views []backend.CatalogView) error {
	if len(views) == 0 {
		return nil
	}
	n := len(views)
	ids, resolvers, reasons, descriptors := make([]string, n), make([]string, n), make([]*string, n), make([]*string, n)
	backfills, counts := make([]bool, n), make([]int64, n)
	var (
		parents, children, modes []string
		ords                     []int32
		created                  []int64
		labels                   []*string
	)
	for i, v := range views {
		ids[i], resolvers[i], reasons[i], backfills[i], counts[i] = v.ID, v.Resolver, optString(v.Reason), v.Backfill, int64(v.EvidenceCount)
		if v.EvidenceDescriptor != nil {
			d := string(v.EvidenceDescriptor)
			descriptors[i] = &d
		}
		for k, e := range v.Entries {
			parents, ords, children = append(parents, v.ID), append(ords, int32(k)), append(children, e.ID)
			created, modes, labels = append(created, e.CreatedAt), append(modes, e.Mode), append(labels, e.Label)
		}
	}
	const what = "write the resolved catalogs of a batch of sessions"
	q := s.q()
	if _, err := q.Exec(ctx, `UPDATE catalog_views AS v
		SET resolver = x.resolver, reason = x.reason, backfill = x.backfill, ev_count = x.ev_count, ev_descriptor = x.ev_descriptor
		FROM unnest($1::text[], $2::text[], $3::text[], $4::boolean[], $5::bigint[], $6::text[])
		  AS x (id, resolver, reason, backfill, ev_count, ev_descriptor)
		WHERE v.id = x.id`, ids, resolvers, reasons, backfills, counts, descriptors); err != nil {
		return s.storeError(err, what)
	}
	if _, err := q.Exec(ctx, `DELETE FROM catalog_view_entries WHERE parent = ANY($1::text[])`, ids); err != nil {
		return s.storeError(err, what)
	}
	if len(parents) == 0 {
		return nil
	}
	// Entries of a view whose session is gone (no view row) are skipped.
	if _, err := q.Exec(ctx, `INSERT INTO catalog_view_entries (parent, ord, child, created_at, mode, label)
		SELECT x.parent, x.ord, x.child, x.created_at, x.mode, x.label
		  FROM unnest($1::text[], $2::integer[], $3::text[], $4::bigint[], $5::text[], $6::text[])
		    AS x (parent, ord, child, created_at, mode, label)
		 WHERE EXISTS (SELECT 1 FROM catalog_views v WHERE v.id = x.parent)`, parents, ords, children, created, modes, labels); err != nil {
		return s.storeError(err, what)
	}
	return nil
}
