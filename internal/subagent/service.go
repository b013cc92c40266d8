package subagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/corpus"
	"github.com/dsh-project/dsh/internal/projcache"
	"github.com/dsh-project/dsh/internal/session"
)

// NewRegistry returns the projection registry dsh folds: the `subagent`
// identity unit.
func NewRegistry() *projcache.Registry {
	reg := projcache.NewRegistry()
	if err := RegisterUnit(reg); err != nil {
		// Registering one unit into an empty registry cannot conflict.
		panic(fmt.Sprintf("register subagent unit: %v", err))
	}
	return reg
}

// ListingReader is what a listing reads from a corpus: the children of a
// parent and hasChildren from the headers, and a cold child's log. A dsh
// store and a foreign DSH corpus read in place both offer it.
type ListingReader interface {
	backend.ChildrenReader
	backend.LogReader
}

// ListingStore is a backend a listing reads with its checkpoint cache, in
// one consistent snapshot.
type ListingStore interface {
	ListingReader
	backend.CheckpointReader
	backend.Transactor
}

// NewLister returns a Lister over any corpus: headers and cold reads from
// r, live records from live (nil when nothing can be live), rung 2 from
// cache (nil: none).
func NewLister(r ListingReader, live corpus.LiveSource, cache IdentityCache, coldConcurrency int) *Lister {
	var (
		cold ColdReader = logColdReader{r}
		own  *batchColdReader
	)
	if b, ok := r.(backend.VerifiedBatchReader); ok {
		verdicts, _ := r.(backend.ColdVerdictReader)
		own = &batchColdReader{logColdReader{r}, b, verdicts}
		cold = own
	}
	descriptors, _ := r.(backend.DescriptorReader)
	return &Lister{
		ownCold:         own,
		Headers:         r,
		Live:            live,
		Cold:            cold,
		Cache:           cache,
		Units:           NewRegistry(),
		Descriptors:     descriptors,
		ColdConcurrency: coldConcurrency,
	}
}

// NewStoreLister returns a Lister over a backend: NewLister with rung 2 from
// the backend's checkpoint cache and the enumeration bound to one snapshot
// (live is typically the backend itself).
func NewStoreLister(store ListingStore, live corpus.LiveSource, coldConcurrency int) *Lister {
	l := NewLister(store, live, nil, coldConcurrency)
	l.Cache = CacheIdentities{projcache.NewCache(store, l.Units)}
	l.resolvedRows = true
	l.Snapshot = func(ctx context.Context, headers corpus.HeaderSource, live corpus.LiveSource, fn func(corpus.HeaderSource, corpus.LiveSource) error) error {
		return store.View(ctx, func(view backend.Store) error {
			// Bind this store's own headers and leases to the read; any
			// other source is used as it is.
			if any(headers) == any(store) {
				headers = view
			}
			if any(live) == any(store) {
				live = view
			}
			return fn(headers, live)
		})
	}
	return l
}

// logColdReader reads cold children through a corpus's read-only Inspect;
// InspectTypes gives the same verdict as a full read while keeping only
// the requested event types.
type logColdReader struct{ r backend.LogReader }

func (c logColdReader) ColdRead(ctx context.Context, id string, types []string) (session.Header, []session.Event, error) {
	var (
		in  *backend.Inspection
		err error
	)
	if types == nil {
		in, err = c.r.Inspect(ctx, id)
	} else {
		in, err = c.r.InspectTypes(ctx, id, types...)
	}
	if err != nil {
		return session.Header{}, nil, err
	}
	return in.Header, in.Events, nil
}

// batchColdReader is a logColdReader that reads every verified log of a
// batch in one go, after taking from the backend, when it records them,
// what it recorded about the others (read failures, registry folds).
type batchColdReader struct {
	logColdReader
	batch    backend.VerifiedBatchReader
	verdicts backend.ColdVerdictReader // nil: nothing recorded
}

// ColdReadMany implements BatchColdReader; logs the backend has neither a
// verdict for nor verified are left to ColdRead.
func (c *batchColdReader) ColdReadMany(ctx context.Context, ids []string, types []string) (map[string]ColdLog, error) {
	if both, ok := c.batch.(backend.ColdBatchReader); ok && c.verdicts != nil {
		recorded, ins, err := both.InspectColdBatch(ctx, ids, types)
		if err != nil {
			return nil, err
		}
		out := make(map[string]ColdLog, len(recorded)+len(ins))
		for id, v := range recorded {
			out[id] = ColdLog{Err: v.ReadErr, RegistryFold: v.RegistryFold}
		}
		for id, in := range ins {
			out[id] = ColdLog{Header: in.Header, Events: in.Events}
		}
		return out, nil
	}
	out := make(map[string]ColdLog, len(ids))
	rest := ids
	if c.verdicts != nil {
		recorded, err := c.verdicts.ColdVerdicts(ctx, ids)
		if err != nil {
			return nil, err
		}
		rest = make([]string, 0, len(ids)-len(recorded))
		for _, id := range ids {
			v, ok := recorded[id]
			if !ok {
				rest = append(rest, id)
				continue
			}
			out[id] = ColdLog{Err: v.ReadErr, RegistryFold: v.RegistryFold}
		}
	}
	ins, err := c.batch.InspectVerifiedTypes(ctx, rest, types)
	if err != nil {
		return nil, err
	}
	for id, in := range ins {
		out[id] = ColdLog{Header: in.Header, Events: in.Events}
	}
	return out, nil
}

// CacheIdentities serves rung 2 from dsh's checkpoint cache: the `subagent`
// view of every record that matches its header's lifecycle and the unit's
// state version.
type CacheIdentities struct{ Cache *projcache.Cache }

// CachedSubagentViews implements IdentityCache with one query.
func (c CacheIdentities) CachedSubagentViews(ctx context.Context, headers []session.Header) (map[string]json.RawMessage, error) {
	found, err := c.Cache.LookupMany(ctx, headers)
	if err != nil {
		return nil, err
	}
	views := make(map[string]json.RawMessage, len(found))
	for id, l := range found {
		if l.Status != projcache.Hit {
			continue
		}
		if v, ok := l.Values[UnitKey]; ok {
			views[id] = v
		}
	}
	return views, nil
}

// Checkpoints is a dsh store's checkpoint cache together with the readers
// its maintenance (stats, verify, rebuild) needs.
type Checkpoints struct {
	Cache  *projcache.Cache
	Read   projcache.ReadFunc
	Header projcache.HeaderFunc
	// tx, when the store has transactions, runs fn in one write
	// transaction of it.
	tx func(ctx context.Context, fn func(tx backend.Store) error) error
	// verdicts, when the store records registry folds, reads them.
	verdicts backend.ColdVerdictReader
	// logs reads the logs verify checks.
	logs backend.LogReader
}

// VerifyFolds refolds the log of each of ids (nil: every session with a
// checkpoint record) whose store keeps a registry fold recorded under this
// registry, and reports every fold that differs from the refold (a listing
// trusts it as it would the log): Verify's fold findings. It writes
// nothing; call it in the same read snapshot as the store it was built on.
func (c Checkpoints) VerifyFolds(ctx context.Context, ids []string) ([]projcache.Finding, error) {
	rep, err := c.Verify(ctx, ids, nil)
	return rep.Folds.Findings, err
}

// FoldReport is what a verify checked and found of the registry folds.
type FoldReport struct {
	// Checked counts the registry folds compared with a refold of their
	// logs.
	Checked  int
	Findings []projcache.Finding
}

// Rebuild is Cache.Rebuild that also records each rewritten session's
// registry fold beside its log (RecordRegistryFold), so that a listing
// resolves forks and identity-less children without reading their logs
// after a rebuild too. A chunk of sessions is read (in a batch, readLogs),
// refolded and recorded in one write transaction, so each fold is of the
// log as stored and an interrupted rebuild leaves every record either old
// or new. A store without transactions gets Cache.Rebuild. progress (may
// be nil) is called before and after each chunk.
func (c Checkpoints) Rebuild(ctx context.Context, ids []string, progress func(done, total int)) (projcache.RebuildReport, error) {
	if c.tx == nil {
		return c.Cache.Rebuild(ctx, c.Read, ids, progress)
	}
	var rep projcache.RebuildReport
	reg := NewRegistry()
	err := c.eachChunk(ctx, ids, progress, func(part []string) error {
		one := projcache.RebuildReport{}
		err := c.tx(ctx, func(tx backend.Store) error {
			cache := projcache.NewCache(tx, reg)
			// Each log is folded as it is read, and only its fold kept.
			folds := make(map[string]projcache.Refold, len(part))
			var mu sync.Mutex
			type job struct {
				id  string
				log projcache.LogRead
			}
			err := pool(func(submit func(job)) error {
				return readLogs(ctx, tx, part, func(id string, log projcache.LogRead) error {
					submit(job{id, log})
					return ctx.Err()
				})
			}, func(j job) {
				r := cache.FoldLog(j.log)
				mu.Lock()
				folds[j.id] = r
				mu.Unlock()
			})
			if err != nil {
				return err
			}
			for _, id := range part {
				if err := ctx.Err(); err != nil {
					return err
				}
				fold, err := cache.RebuildFolded(ctx, id, folds[id], &one)
				if err != nil {
					return err
				}
				if fold != nil {
					if err := RecordRegistryFold(ctx, tx, reg, id, fold); err != nil {
						return err
					}
				}
			}
			return RefreshResolvedRowsIn(ctx, tx, part)
		})
		if err != nil {
			return err
		}
		rep.Rewritten += one.Rewritten
		rep.Removed = append(rep.Removed, one.Removed...)
		rep.UnitFailures = append(rep.UnitFailures, one.UnitFailures...)
		return nil
	})
	return rep, err
}

// CheckpointStore is a backend whose checkpoint cache dsh maintains.
type CheckpointStore interface {
	backend.HeaderReader
	backend.LogReader
	backend.CheckpointReader
	backend.CheckpointWriter
}

// StoreCheckpoints returns the checkpoint cache of store, folded with dsh's
// registry. Reads go through the store's read-only Inspect (the valid
// stored prefix), and an unknown session is reported as gone.
func StoreCheckpoints(store CheckpointStore) Checkpoints {
	c := Checkpoints{
		Cache: projcache.NewCache(store, NewRegistry()),
		Read:  inspectRead(store),
		logs:  store,
		Header: func(ctx context.Context, id string) (session.Header, error) {
			h, err := store.Header(ctx, id)
			return h, gone(err)
		},
	}
	if t, ok := store.(backend.Transactor); ok {
		c.tx = t.Update
	}
	c.verdicts, _ = store.(backend.ColdVerdictReader)
	return c
}

// inspectRead reads a session's valid stored prefix through r's read-only
// Inspect, an unknown session reported as gone.
func inspectRead(r backend.LogReader) projcache.ReadFunc {
	return func(ctx context.Context, id string) (session.Header, []session.Event, error) {
		in, err := r.Inspect(ctx, id)
		if err != nil {
			return session.Header{}, nil, gone(err)
		}
		return in.Header, in.Events, nil
	}
}

func gone(err error) error {
	if errors.Is(err, backend.ErrNotFound) {
		return fmt.Errorf("%w: %w", projcache.ErrSessionGone, err)
	}
	return err
}
