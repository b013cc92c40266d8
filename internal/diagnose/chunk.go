package diagnose

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/corpus"
	"github.com/dsh-project/dsh/internal/projcache"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/subagent"
)

// chunkIdentities serves the ladder's cache rung from the records of the
// chunk being examined: the checkpoint records are read once per chunk, by
// id, for the ladder and the cache check alike. (Reading a parent's whole
// range of records, as a listing does, would read it once per chunk.)
type chunkIdentities struct{ cache *projcache.Cache }

func (c *chunkIdentities) CachedSubagentViews(ctx context.Context, headers []session.Header) (map[string]json.RawMessage, error) {
	return subagent.CacheIdentities{Cache: c.cache}.CachedSubagentViews(ctx, headers)
}

// chunkRead is what the audits of one chunk read before any log: the
// ladder's resolutions and the parents' headers. An audit then needs only
// its log, so the logs can be streamed.
type chunkRead struct {
	res     []*subagent.Resolution
	parents map[string]*session.Header
	// folds are the registry folds the store recorded beside the logs.
	folds map[string][]byte
	// catalogs are the parents' catalogs the cross-check compares their
	// subagent children with (nil where it does not apply).
	catalogs map[string]*catalogView
}

// auditChunk audits part in a fixed number of queries: its checkpoint
// records, the ladder's resolutions of its candidates, its parents'
// headers, and its logs in one stream.
func (a *auditor) auditChunk(ctx context.Context, part []item, scope corpus.Scope) ([]Report, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(part))
	// at lists each id's items (an id is audited once however often it
	// is listed).
	at := make(map[string][]int, len(part))
	for i, it := range part {
		if !it.unknown {
			if _, dup := at[it.header.ID]; !dup {
				ids = append(ids, it.header.ID)
			}
			at[it.header.ID] = append(at[it.header.ID], i)
		}
	}
	if err := a.loadRecords(ctx, ids); err != nil {
		return nil, err
	}
	read := chunkRead{res: make([]*subagent.Resolution, len(part)), parents: map[string]*session.Header{}, catalogs: map[string]*catalogView{}}
	folds, err := a.recordedFolds(ctx, ids)
	if err != nil {
		return nil, err
	}
	read.folds = folds
	replaced, err := a.recordedReplacements(ctx, ids)
	if err != nil {
		return nil, err
	}
	var recs []corpus.Record
	var cands []int
	for i, it := range part {
		if it.rec != nil {
			recs = append(recs, *it.rec)
			cands = append(cands, i)
		}
		if p := it.header.ParentSession; p != nil && !it.unknown {
			if _, ok := read.parents[*p]; !ok {
				h, err := a.parentHeader(ctx, *p)
				if err != nil {
					return nil, err
				}
				read.parents[*p] = h
			}
			if _, ok := read.catalogs[*p]; !ok && it.header.IsSubagent() && read.parents[*p] != nil {
				v, err := a.parentCatalog(ctx, *p)
				if err != nil {
					return nil, err
				}
				read.catalogs[*p] = v
			}
		}
	}
	if a.opts.Profile.CatalogAuthority() {
		// The rows come from DSH 0.1.7's listing, not from the ladder.
		for i, it := range part {
			p := it.header.ParentSession
			if p == nil || it.unknown {
				continue
			}
			root := *p
			if scope == corpus.ScopeDescendants {
				root = a.opts.Select.Parent
			}
			if read.res[i], err = a.catalogResolution(ctx, root, it.header.ID, scope); err != nil {
				return nil, err
			}
		}
	} else if len(recs) > 0 {
		resolved, err := a.lister.ResolveRecords(ctx, recs, scope)
		if err != nil {
			return nil, err
		}
		for j, i := range cands {
			read.res[i] = &resolved[j]
		}
	}
	reports := make([]Report, len(part))
	// catalogs holds the own catalog of each session that has one: the
	// children it names without a session are looked up once the stream
	// of logs is closed, and reported after the parent.
	catalogs := make([]*catalogView, len(part))
	for i, it := range part {
		if it.unknown {
			reports[i], _, _ = a.audit(ctx, it, nil, nil, read)
		}
	}
	err = a.auditLogs(ctx, ids, func(log *backend.AuditRead) error {
		items, ok := at[log.Header.ID]
		if !ok {
			return fmt.Errorf("audit of %q: not requested", log.Header.ID)
		}
		if r, ok := replaced[log.Header.ID]; ok && log.TextReplaced == nil {
			log.TextReplaced = &r
		}
		for n, i := range items {
			r, own, err := a.audit(ctx, part[i], read.res[i], log, read)
			if err != nil {
				return err
			}
			reports[i] = r
			if n == 0 {
				catalogs[i] = own
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]Report, 0, len(reports))
	for i := range reports {
		out = append(out, reports[i])
		if catalogs[i] == nil {
			continue
		}
		missing, err := a.missingChildren(ctx, catalogs[i])
		if err != nil {
			return nil, err
		}
		out = append(out, missing...)
	}
	return out, nil
}

// loadRecords reads the checkpoint records of ids into the chunk's cache.
func (a *auditor) loadRecords(ctx context.Context, ids []string) error {
	a.records = projcache.NewMemoryRecords()
	a.cache = projcache.NewCache(a.records, a.reg)
	a.idents.cache = a.cache
	return a.view.CheckpointsOf(ctx, ids, func(rec backend.CheckpointRecord) error {
		return a.records.PutCheckpoint(ctx, rec)
	})
}

// recordedFolds reads the registry folds recorded beside the logs of ids,
// when the store records them, in one query.
func (a *auditor) recordedFolds(ctx context.Context, ids []string) (map[string][]byte, error) {
	v, ok := a.view.(backend.ColdVerdictReader)
	if !ok || len(ids) == 0 {
		return nil, nil
	}
	verdicts, err := v.ColdVerdicts(ctx, ids)
	if err != nil {
		return nil, err
	}
	folds := make(map[string][]byte, len(verdicts))
	for id, verdict := range verdicts {
		if verdict.RegistryFold != nil {
			folds[id] = verdict.RegistryFold
		}
	}
	return folds, nil
}

// recordedReplacements reads, when the store records them, which imported
// logs were read from text that is not UTF-8, in one query (a corpus read
// in place says so in each AuditRead instead).
func (a *auditor) recordedReplacements(ctx context.Context, ids []string) (map[string]backend.TextReplaced, error) {
	v, ok := a.view.(backend.TextReplacementReader)
	if !ok || len(ids) == 0 {
		return nil, nil
	}
	return v.TextReplacedOf(ctx, ids)
}

// auditLogs calls fn with the audit read of every id: in a few queries
// from a store that audits in batches, else one log at a time.
func (a *auditor) auditLogs(ctx context.Context, ids []string, fn func(*backend.AuditRead) error) error {
	if len(ids) == 0 {
		return nil
	}
	if b, ok := a.view.(backend.BatchAuditor); ok {
		return b.AuditEach(ctx, ids, fn)
	}
	for _, id := range ids {
		log, err := a.view.Audit(ctx, id)
		if err != nil {
			return err
		}
		if err := fn(log); err != nil {
			return err
		}
	}
	return nil
}
