package sqlitepersist

import (
	"context"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/sqlstore"
)

// The projection_checkpoints table (migration 0002) stores the records
// package projcache writes; the shared part (sqlstore.Core) reads and
// deletes them.

// PutCheckpoint implements backend.CheckpointWriter: the record is
// replaced whole, stamped with the store's clock.
func (s *Store) PutCheckpoint(ctx context.Context, rec backend.CheckpointRecord) error {
	w := rec.Witness
	args := append(sqlstore.HeaderArgs(w), rec.AsOfSeq, string(rec.Rows), w.SeedLength != nil, s.now())
	_, err := s.Querier().ExecContext(ctx, `INSERT OR REPLACE INTO projection_checkpoints (`+sqlstore.CheckpointColumns+`, is_seeded, written_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, args...)
	if err != nil {
		return s.storeError(err, "write checkpoint of "+w.ID)
	}
	return nil
}
