package sqlstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/dsh-project/dsh/internal/backend"
)

// The projection_checkpoints table holds the records package projcache
// writes. Its witness columns mirror the sessions table's header columns
// (scanned like a header); is_seeded is derived from seed_length. Writing
// one (PutCheckpoint) stays with each store: it is an upsert stamped with
// the store's clock, which is the dialect's.

// CheckpointColumns are the columns a CheckpointRecord is read from.
const CheckpointColumns = "session_id, version, created_at, cwd, parent_session, seed_length, origin, delegation_depth, agent_preset, as_of_seq, rows"

// Checkpoint implements backend.CheckpointReader.
func (c Core) Checkpoint(ctx context.Context, id string) (backend.CheckpointRecord, bool, error) {
	hs := c.d.NewHeaderScan()
	var (
		rec  backend.CheckpointRecord
		text string
	)
	err := c.db.Q().QueryRow(ctx, "SELECT "+CheckpointColumns+" FROM projection_checkpoints WHERE session_id = ?", id).
		Scan(withTargets(hs, &rec.AsOfSeq, &text)...)
	if errors.Is(err, ErrNoRows) {
		return backend.CheckpointRecord{}, false, nil
	}
	if err != nil {
		return backend.CheckpointRecord{}, false, c.db.StoreError(err, "read checkpoint of "+id)
	}
	rec.Witness, rec.Rows = hs.Header(), []byte(text)
	return rec, true, nil
}

// CheckpointsOf implements backend.CheckpointReader with one query.
func (c Core) CheckpointsOf(ctx context.Context, ids []string, fn func(backend.CheckpointRecord) error) error {
	if len(ids) == 0 {
		return nil
	}
	return c.eachCheckpoint(ctx, fn, fmt.Sprintf("read checkpoints of %d sessions", len(ids)),
		"WHERE "+c.d.InIDs("session_id"), c.d.IDs(ids))
}

// ChildCheckpoints implements backend.CheckpointReader with one range of
// the projection_checkpoints_by_parent index.
func (c Core) ChildCheckpoints(ctx context.Context, parent string, fn func(backend.CheckpointRecord) error) error {
	return c.eachCheckpoint(ctx, fn, "read checkpoints of the children of "+parent, "WHERE parent_session = ?", parent)
}

// EachCheckpoint implements backend.CheckpointReader.
func (c Core) EachCheckpoint(ctx context.Context, fn func(backend.CheckpointRecord) error) error {
	return c.eachCheckpoint(ctx, fn, "read checkpoints", "ORDER BY session_id")
}

func (c Core) eachCheckpoint(ctx context.Context, fn func(backend.CheckpointRecord) error, what, where string, args ...any) error {
	rows, err := c.db.Q().Query(ctx, "SELECT "+CheckpointColumns+" FROM projection_checkpoints "+where, args...)
	if err != nil {
		return c.db.StoreError(err, what)
	}
	defer rows.Close()
	hs := c.d.NewHeaderScan()
	var (
		asOf int64
		text string
	)
	targets := withTargets(hs, &asOf, &text)
	for rows.Next() {
		if err := rows.Scan(targets...); err != nil {
			return c.db.StoreError(err, what)
		}
		if err := fn(backend.CheckpointRecord{Witness: hs.Header(), AsOfSeq: asOf, Rows: []byte(text)}); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return c.db.StoreError(err, what)
	}
	return nil
}

// DeleteCheckpoint implements backend.CheckpointWriter.
func (c Core) DeleteCheckpoint(ctx context.Context, id string) error {
	if _, err := c.db.Q().Exec(ctx, "DELETE FROM projection_checkpoints WHERE session_id = ?", id); err != nil {
		return c.db.StoreError(err, "delete checkpoint of "+id)
	}
	return nil
}

// ClearCheckpoints implements backend.CheckpointWriter.
func (c Core) ClearCheckpoints(ctx context.Context) (int64, error) {
	if _, err := c.db.Q().Exec(ctx, "UPDATE sessions SET registry_fold = NULL WHERE registry_fold IS NOT NULL"); err != nil {
		return 0, c.db.StoreError(err, "clear registry folds")
	}
	n, err := c.db.Q().Exec(ctx, "DELETE FROM projection_checkpoints")
	if err != nil {
		return 0, c.db.StoreError(err, "clear checkpoints")
	}
	return n, nil
}
