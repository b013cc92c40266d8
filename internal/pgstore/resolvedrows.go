package pgstore

import (
	"context"

	"github.com/dsh-project/dsh/internal/backend"
)

// PutResolvedRows implements backend.ResolvedRowWriter in one statement,
// whatever the number of rows: the rows travel as arrays that unnest turns
// back into rows (the shared method's statement a row is a round trip
// each, a batch of imported children's rows a thousand).
func (s *Store) PutResolvedRows(ctx context.Context, rows []backend.ResolvedRow) error {
	if len(rows) == 0 {
		return nil
	}
	n := len(rows)
	ids, resolvers, kinds := make([]string, n), make([]string, n), make([]string, n)
	reasons, modes, labels := make([]*string, n), make([]*string, n), make([]*string, n)
	for i, r := range rows {
		ids[i], resolvers[i], kinds[i] = r.ID, r.Resolver, r.Kind
		reasons[i], modes[i], labels[i] = optString(r.Reason), optString(r.Mode), r.Label
	}
	_, err := s.q().Exec(ctx, `UPDATE listing_rows AS r
		SET resolver = v.resolver, kind = v.kind, reason = v.reason, mode = v.mode, label = v.label
		FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[]) AS v (id, resolver, kind, reason, mode, label)
		WHERE r.id = v.id`, ids, resolvers, kinds, reasons, modes, labels)
	if err != nil {
		return s.storeError(err, "write the resolved rows of a batch of children")
	}
	return nil
}

// optString is s as a nil-able *string, nil for "".
func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
