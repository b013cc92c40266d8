package transfer

import (
	"context"
	"encoding/json"
	"errors"
	"math"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/dshformat"
	"github.com/dsh-project/dsh/internal/projcache"
	"github.com/dsh-project/dsh/internal/subagent"
)

// CheckpointTarget is where SeedCheckpoints writes: the headers the records
// are matched against and the checkpoint records themselves.
type CheckpointTarget interface {
	backend.HeaderReader
	backend.CheckpointReader
	backend.CheckpointWriter
}

// SeedCheckpoints turns the records of DSH's projection cache file into
// projection checkpoints in dst, so that dsh's readers use them as DSH uses
// its cache: a record counts only for a session of dst whose header matches
// its identity (createdAt and cwd), and its rows are kept as they are —
// possibly stale, never trusted beyond what a checkpoint is — watermarked at
// the highest row seq. A record with a row dsh cannot store (a state that is
// not JSON) is left out. It returns the number of checkpoints written.
func SeedCheckpoints(ctx context.Context, dst CheckpointTarget, file *dshformat.CacheFile) (int, error) {
	cache := projcache.NewCache(dst, subagent.NewRegistry())
	written := 0
	for _, id := range file.IDs() {
		h, err := dst.Header(ctx, id)
		if errors.Is(err, backend.ErrNotFound) {
			continue
		}
		if err != nil {
			return written, err
		}
		rows, ok := file.Lookup(h)
		if !ok {
			continue
		}
		cp, asOf, ok := checkpointOf(rows)
		if !ok {
			continue
		}
		if err := cache.Put(ctx, h, asOf, cp); err != nil {
			return written, err
		}
		written++
	}
	return written, nil
}

// checkpointOf converts a cache file record's rows; false when one of them
// cannot be stored.
func checkpointOf(rows map[string]dshformat.CacheRow) (projcache.Checkpoint, int64, bool) {
	cp := make(projcache.Checkpoint, len(rows))
	asOf := int64(-1)
	for key, r := range rows {
		if key == "" || r.Ver > math.MaxInt || !json.Valid(r.Val) {
			return nil, 0, false
		}
		cp[key] = projcache.Row{Ver: int(r.Ver), Seq: r.Seq, Val: r.Val}
		asOf = max(asOf, r.Seq)
	}
	return cp, asOf, true
}
