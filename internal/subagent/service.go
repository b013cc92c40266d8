package subagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/dsh-project/dsh/internal/corpus"
	"github.com/dsh-project/dsh/internal/projcache"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/sqlitepersist"
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

// NewStoreLister returns a Lister over a dsh store: headers and cold reads
// from the store, rung 2 from the store's checkpoint cache, live records from
// live (nil when nothing can be live).
func NewStoreLister(store *sqlitepersist.Store, live corpus.LiveSource, coldConcurrency int) *Lister {
	reg := NewRegistry()
	return &Lister{
		Headers:         store,
		Live:            live,
		Cold:            storeColdReader{store},
		Cache:           CacheIdentities{projcache.NewCache(store, reg)},
		Units:           reg,
		ColdConcurrency: coldConcurrency,
		Snapshot: func(ctx context.Context, headers corpus.HeaderSource, live corpus.LiveSource, fn func(corpus.HeaderSource, corpus.LiveSource) error) error {
			return store.ReadSnapshot(ctx, func(view *sqlitepersist.Store) error {
				// Bind this store's own headers and leases to the read;
				// any other source is used as it is.
				if h, ok := headers.(*sqlitepersist.Store); ok && h == store {
					headers = view
				}
				if l, ok := live.(*sqlitepersist.Store); ok && l == store {
					live = view
				}
				return fn(headers, live)
			})
		},
	}
}

// storeColdReader reads cold children through the store's read-only
// Inspect; InspectTypes gives the same verdict as a full read while reading
// only the requested event types of a log the store has verified.
type storeColdReader struct{ store *sqlitepersist.Store }

// ColdReadMany reads every log the store has verified in one snapshot; the
// others are left to ColdRead.
func (r storeColdReader) ColdReadMany(ctx context.Context, ids []string, types []string) (map[string]ColdLog, error) {
	ins, err := r.store.InspectVerifiedTypes(ctx, ids, types)
	if err != nil {
		return nil, err
	}
	out := make(map[string]ColdLog, len(ins))
	for id, in := range ins {
		out[id] = ColdLog{Header: in.Header, Events: in.Events}
	}
	return out, nil
}

func (r storeColdReader) ColdRead(ctx context.Context, id string, types []string) (session.Header, []session.Event, error) {
	var (
		in  *sqlitepersist.Inspection
		err error
	)
	if types == nil {
		in, err = r.store.Inspect(ctx, id)
	} else {
		in, err = r.store.InspectTypes(ctx, id, types...)
	}
	if err != nil {
		return session.Header{}, nil, err
	}
	return in.Header, in.Events, nil
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
}

// StoreCheckpoints returns the checkpoint cache of store, folded with dsh's
// registry. Reads go through the store's read-only Inspect (the valid
// stored prefix), and an unknown session is reported as gone.
func StoreCheckpoints(store *sqlitepersist.Store) Checkpoints {
	gone := func(err error) error {
		if errors.Is(err, sqlitepersist.ErrNotFound) {
			return fmt.Errorf("%w: %w", projcache.ErrSessionGone, err)
		}
		return err
	}
	return Checkpoints{
		Cache: projcache.NewCache(store, NewRegistry()),
		Read: func(ctx context.Context, id string) (session.Header, []session.Event, error) {
			in, err := store.Inspect(ctx, id)
			if err != nil {
				return session.Header{}, nil, gone(err)
			}
			return in.Header, in.Events, nil
		},
		Header: func(ctx context.Context, id string) (session.Header, error) {
			h, err := store.Header(ctx, id)
			return h, gone(err)
		},
	}
}
