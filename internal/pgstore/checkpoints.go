package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/dsh-project/dsh/internal/backend"
)

// The projection_checkpoints table (migration 0002) stores the records
// package projcache writes; its witness columns mirror the sessions table's header
// columns, so they scan like a header.
const checkpointColumns = "session_id, version, created_at, cwd, parent_session, seed_length, origin, delegation_depth, agent_preset, as_of_seq, rows"

func checkpointTargets(rec *backend.CheckpointRecord, rows *string) []any {
	return append(headerTargets(&rec.Witness), &rec.AsOfSeq, rows)
}

// Checkpoint implements backend.CheckpointReader.
func (s *Store) Checkpoint(ctx context.Context, id string) (backend.CheckpointRecord, bool, error) {
	var rec backend.CheckpointRecord
	var rows string
	err := s.q().QueryRow(ctx, "SELECT "+checkpointColumns+" FROM projection_checkpoints WHERE session_id = $1", id).
		Scan(checkpointTargets(&rec, &rows)...)
	if errors.Is(err, pgx.ErrNoRows) {
		return backend.CheckpointRecord{}, false, nil
	}
	if err != nil {
		return backend.CheckpointRecord{}, false, s.storeError(err, "read checkpoint of "+id)
	}
	rec.Rows = []byte(rows)
	return rec, true, nil
}

// CheckpointsOf implements backend.CheckpointReader with one query.
func (s *Store) CheckpointsOf(ctx context.Context, ids []string, fn func(backend.CheckpointRecord) error) error {
	if len(ids) == 0 {
		return nil
	}
	return s.eachCheckpoint(ctx, fn, fmt.Sprintf("read checkpoints of %d sessions", len(ids)),
		"WHERE session_id = ANY($1::text[])", ids)
}

// ChildCheckpoints implements backend.CheckpointReader with one range of
// the projection_checkpoints_by_parent index.
func (s *Store) ChildCheckpoints(ctx context.Context, parent string, fn func(backend.CheckpointRecord) error) error {
	return s.eachCheckpoint(ctx, fn, "read checkpoints of the children of "+parent, "WHERE parent_session = $1", parent)
}

// EachCheckpoint implements backend.CheckpointReader.
func (s *Store) EachCheckpoint(ctx context.Context, fn func(backend.CheckpointRecord) error) error {
	return s.eachCheckpoint(ctx, fn, "read checkpoints", "ORDER BY session_id")
}

func (s *Store) eachCheckpoint(ctx context.Context, fn func(backend.CheckpointRecord) error, what, where string, args ...any) error {
	rows, err := s.q().Query(ctx, "SELECT "+checkpointColumns+" FROM projection_checkpoints "+where, args...)
	if err != nil {
		return s.storeError(err, what)
	}
	defer rows.Close()
	var rec backend.CheckpointRecord
	var text string
	targets := checkpointTargets(&rec, &text)
	for rows.Next() {
		rec = backend.CheckpointRecord{}
		if err := rows.Scan(targets...); err != nil {
			return s.storeError(err, what)
		}
		rec.Rows = []byte(text)
		if err := fn(rec); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return s.storeError(err, what)
	}
	return nil
}

// PutCheckpoint implements backend.CheckpointWriter: the record is
// replaced whole, stamped with the server's clock.
func (s *Store) PutCheckpoint(ctx context.Context, rec backend.CheckpointRecord) error {
	w := rec.Witness
	args := append(headerArgs(w), rec.AsOfSeq, string(rec.Rows), w.SeedLength != nil)
	_, err := s.q().Exec(ctx, `INSERT INTO projection_checkpoints (`+checkpointColumns+`, is_seeded, written_at)
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

// DeleteCheckpoint implements backend.CheckpointWriter.
func (s *Store) DeleteCheckpoint(ctx context.Context, id string) error {
	if _, err := s.q().Exec(ctx, "DELETE FROM projection_checkpoints WHERE session_id = $1", id); err != nil {
		return s.storeError(err, "delete checkpoint of "+id)
	}
	return nil
}

// ClearCheckpoints implements backend.CheckpointWriter.
func (s *Store) ClearCheckpoints(ctx context.Context) (int64, error) {
	if _, err := s.q().Exec(ctx, "UPDATE sessions SET registry_fold = NULL WHERE registry_fold IS NOT NULL"); err != nil {
		return 0, s.storeError(err, "clear registry folds")
	}
	tag, err := s.q().Exec(ctx, "DELETE FROM projection_checkpoints")
	if err != nil {
		return 0, s.storeError(err, "clear checkpoints")
	}
	return tag.RowsAffected(), nil
}
