package subagent

import (
	"context"
	"encoding/json"
	"math"

	"github.com/dsh-project/dsh/internal/dshformat"
	"github.com/dsh-project/dsh/internal/projcache"
	"github.com/dsh-project/dsh/internal/session"
)

// NewCorpusLister returns a Lister over a foreign DSH corpus read in place:
// NewLister over the corpus (every child inactive: no dsh process holds a
// foreign session; cold reads are DSH's inspect with its read-side
// validation), and cache, when not nil, DSH's projection cache serving
// rung 2.
func NewCorpusLister(c *dshformat.Corpus, cache *dshformat.CacheFile, coldConcurrency int) *Lister {
	l := NewLister(c, nil, nil, coldConcurrency)
	if cache != nil {
		l.Cache = DSHCacheIdentities{File: cache, Units: l.Units}
	}
	return l
}

// DSHCacheIdentities serves rung 2 from DSH's own projection cache file: a
// record is used only when its identity (createdAt and cwd) matches the
// header, and only the `subagent` row at the registered state version; any
// other record or row is a miss.
type DSHCacheIdentities struct {
	File  *dshformat.CacheFile
	Units *projcache.Registry
	// RC8Only leaves out the records DSH 0.1.0-rc.8 would not read (a
	// later release's per-record cache).
	RC8Only bool
}

// RC8 implements RC8IdentityCache: the records of DSH 0.1.0-rc.8's own
// aggregate file only.
func (c DSHCacheIdentities) RC8() IdentityCache {
	c.RC8Only = true
	return c
}

// CachedSubagentViews implements IdentityCache without any I/O.
func (c DSHCacheIdentities) CachedSubagentViews(ctx context.Context, headers []session.Header) (map[string]json.RawMessage, error) {
	views := make(map[string]json.RawMessage)
	for _, h := range headers {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		lookup := c.File.Lookup
		if c.RC8Only {
			lookup = c.File.LookupRC8
		}
		rows, ok := lookup(h)
		if !ok {
			continue
		}
		row, ok := rows[UnitKey]
		if !ok || row.Ver > math.MaxInt {
			continue
		}
		values, _ := c.Units.ViewCheckpoint(projcache.Checkpoint{UnitKey: {Ver: int(row.Ver), Seq: row.Seq, Val: row.Val}})
		if v, ok := values[UnitKey]; ok {
			views[h.ID] = v
		}
	}
	return views, nil
}
