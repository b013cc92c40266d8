package sqlitepersist

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/jsjson"
)

// The projection_checkpoints table (migration 0002) stores the records
// package projcache writes. Its witness columns mirror the sessions table's header
// columns; is_seeded is derived from seed_length.

const checkpointColumns = `session_id, version, created_at, cwd, parent_session, seed_length,
	origin, delegation_depth, agent_preset, as_of_seq, rows`

func scanCheckpoint(sc rowScanner) (backend.CheckpointRecord, error) {
	var (
		hr   headerRow
		rec  backend.CheckpointRecord
		rows string
	)
	if err := sc.Scan(append(hr.targets(), &rec.AsOfSeq, &rows)...); err != nil {
		return backend.CheckpointRecord{}, err
	}
	rec.Witness = hr.header()
	rec.Rows = []byte(rows)
	return rec, nil
}

// Checkpoint implements backend.CheckpointReader.
func (s *Store) Checkpoint(ctx context.Context, id string) (backend.CheckpointRecord, bool, error) {
	rec, err := scanCheckpoint(s.Querier().QueryRowContext(ctx,
		`SELECT `+checkpointColumns+` FROM projection_checkpoints WHERE session_id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return backend.CheckpointRecord{}, false, nil
	}
	if err != nil {
		return backend.CheckpointRecord{}, false, s.storeError(err, "read checkpoint of "+id)
	}
	return rec, true, nil
}

// CheckpointsOf implements backend.CheckpointReader with one query.
func (s *Store) CheckpointsOf(ctx context.Context, ids []string, fn func(backend.CheckpointRecord) error) error {
	if len(ids) == 0 {
		return nil
	}
	return s.eachCheckpoint(ctx, fn, fmt.Sprintf("read checkpoints of %d sessions", len(ids)),
		`WHERE session_id IN (SELECT value FROM json_each(?))`, jsjson.StringArray(ids))
}

// ChildCheckpoints implements backend.CheckpointReader with one range of
// the projection_checkpoints_by_parent index.
func (s *Store) ChildCheckpoints(ctx context.Context, parent string, fn func(backend.CheckpointRecord) error) error {
	return s.eachCheckpoint(ctx, fn, "read checkpoints of the children of "+parent, `WHERE parent_session = ?`, parent)
}

// EachCheckpoint implements backend.CheckpointReader.
func (s *Store) EachCheckpoint(ctx context.Context, fn func(backend.CheckpointRecord) error) error {
	return s.eachCheckpoint(ctx, fn, "read checkpoints", `ORDER BY session_id`)
}

func (s *Store) eachCheckpoint(ctx context.Context, fn func(backend.CheckpointRecord) error, what, where string, args ...any) error {
	rows, err := s.Querier().QueryContext(ctx, `SELECT `+checkpointColumns+` FROM projection_checkpoints `+where, args...)
	if err != nil {
		return s.storeError(err, what)
	}
	defer rows.Close()
	for rows.Next() {
		rec, err := scanCheckpoint(rows)
		if err != nil {
			return s.storeError(err, what)
		}
		if err := fn(rec); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return s.storeError(err, what)
	}
	return nil
}

// PutCheckpoint implements backend.CheckpointWriter.
func (s *Store) PutCheckpoint(ctx context.Context, rec backend.CheckpointRecord) error {
	w := rec.Witness
	_, err := s.Querier().ExecContext(ctx, `INSERT OR REPLACE INTO projection_checkpoints (`+checkpointColumns+`, is_seeded, written_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		w.ID, w.Version, w.CreatedAt, nullString(w.Cwd), nullString(w.ParentSession), nullInt(w.SeedLength),
		nullString(w.Origin), nullInt(w.DelegationDepth), nullString(w.AgentPreset), rec.AsOfSeq, string(rec.Rows),
		w.SeedLength != nil, s.now())
	if err != nil {
		return s.storeError(err, "write checkpoint of "+w.ID)
	}
	return nil
}

// DeleteCheckpoint implements backend.CheckpointWriter.
func (s *Store) DeleteCheckpoint(ctx context.Context, id string) error {
	if _, err := s.Querier().ExecContext(ctx, `DELETE FROM projection_checkpoints WHERE session_id = ?`, id); err != nil {
		return s.storeError(err, "delete checkpoint of "+id)
	}
	return nil
}

// ClearCheckpoints implements backend.CheckpointWriter.
func (s *Store) ClearCheckpoints(ctx context.Context) (int64, error) {
	if _, err := s.Querier().ExecContext(ctx, `UPDATE sessions SET registry_fold = NULL WHERE registry_fold IS NOT NULL`); err != nil {
		return 0, s.storeError(err, "clear registry folds")
	}
	res, err := s.Querier().ExecContext(ctx, `DELETE FROM projection_checkpoints`)
	if err != nil {
		return 0, s.storeError(err, "clear checkpoints")
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, s.storeError(err, "clear checkpoints")
	}
	return n, nil
}
