package pgstore

import (
	"context"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/sqlstore"
)

// The projection_checkpoints table (migration 0002) stores the records
// package projcache writes; the shared part (sqlstore.Core) reads and
// deletes them.

// PutCheckpoint implements backend.CheckpointWriter: the record is
// replaced whole, stamped with the server's clock (held back in a
// pipelined transaction).
func (s *Store) PutCheckpoint(ctx context.Context, rec backend.CheckpointRecord) error {
	w := rec.Witness
	args := append(sqlstore.HeaderArgs(w), rec.AsOfSeq, string(rec.Rows), w.SeedLength != nil)
	err := execLater(ctx, s.q(), nil, `INSERT INTO projection_checkpoints (`+sqlstore.CheckpointColumns+`, is_seeded, written_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, `+serverMillis+`)
		ON CONFLICT (session_id) DO UPDATE SET version = EXCLUDED.version, created_at = EXCLUDED.created_at,
			cwd = EXCLUDED.cwd, parent_session = EXCLUDED.parent_session, seed_length = EXCLUDED.seed_length,
			origin = EXCLUDED.origin, delegation_depth = EXCLUDED.delegation_depth, agent_preset = EXCLUDED.agent_preset,
			as_of_seq = EXCLUDED.as_of_seq, rows = EXCLUDED.rows, is_seeded = EXCLUDED.is_seeded,
			written_at = EXCLUDED.written_at`, args...)
	if err != nil {
		return s.storeError(err, "write checkpoint of "+w.ID)
	}
	return nil
}
