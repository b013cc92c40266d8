package projcache

import (
	"context"
	"slices"
	"sync"

	"github.com/dsh-project/dsh/internal/backend"
)

// MemoryRecords keeps checkpoint records in memory: the records of a corpus
// that has no checkpoint table of its own (a foreign DSH corpus read in
// place, with DSH's projection cache file converted into records). It
// implements backend.CheckpointReader and backend.CheckpointWriter and is
// safe for concurrent use.
type MemoryRecords struct {
	mu   sync.Mutex
	recs map[string]backend.CheckpointRecord
}

// NewMemoryRecords returns an empty record set.
func NewMemoryRecords() *MemoryRecords {
	return &MemoryRecords{recs: map[string]backend.CheckpointRecord{}}
}

// Checkpoint implements backend.CheckpointReader.
func (m *MemoryRecords) Checkpoint(ctx context.Context, id string) (backend.CheckpointRecord, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.recs[id]
	return r, ok, ctx.Err()
}

// CheckpointsOf implements backend.CheckpointReader.
func (m *MemoryRecords) CheckpointsOf(ctx context.Context, ids []string, fn func(backend.CheckpointRecord) error) error {
	wanted := make(map[string]bool, len(ids))
	for _, id := range ids {
		wanted[id] = true
	}
	return m.each(ctx, fn, func(r backend.CheckpointRecord) bool { return wanted[r.Witness.ID] })
}

// ChildCheckpoints implements backend.CheckpointReader.
func (m *MemoryRecords) ChildCheckpoints(ctx context.Context, parent string, fn func(backend.CheckpointRecord) error) error {
	return m.each(ctx, fn, func(r backend.CheckpointRecord) bool {
		return r.Witness.ParentSession != nil && *r.Witness.ParentSession == parent
	})
}

// EachCheckpoint implements backend.CheckpointReader.
func (m *MemoryRecords) EachCheckpoint(ctx context.Context, fn func(backend.CheckpointRecord) error) error {
	return m.each(ctx, fn, func(backend.CheckpointRecord) bool { return true })
}

// each calls fn, by session id and outside the lock, for the records keep
// selects.
func (m *MemoryRecords) each(ctx context.Context, fn func(backend.CheckpointRecord) error, keep func(backend.CheckpointRecord) bool) error {
	m.mu.Lock()
	var out []backend.CheckpointRecord
	for _, r := range m.recs {
		if keep(r) {
			out = append(out, r)
		}
	}
	m.mu.Unlock()
	slices.SortFunc(out, func(a, b backend.CheckpointRecord) int {
		switch {
		case a.Witness.ID < b.Witness.ID:
			return -1
		case a.Witness.ID > b.Witness.ID:
			return 1
		}
		return 0
	})
	for _, r := range out {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(r); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// PutCheckpoint implements backend.CheckpointWriter.
func (m *MemoryRecords) PutCheckpoint(ctx context.Context, rec backend.CheckpointRecord) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.recs[rec.Witness.ID] = rec
	return nil
}

// DeleteCheckpoint implements backend.CheckpointWriter.
func (m *MemoryRecords) DeleteCheckpoint(ctx context.Context, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.recs, id)
	return nil
}

// ClearCheckpoints implements backend.CheckpointWriter.
func (m *MemoryRecords) ClearCheckpoints(ctx context.Context) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	n := int64(len(m.recs))
	m.recs = map[string]backend.CheckpointRecord{}
	return n, nil
}
