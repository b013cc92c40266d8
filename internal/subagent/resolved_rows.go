package subagent

import (
	"context"
	"strconv"
	"time"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/corpus"
	"github.com/dsh-project/dsh/internal/dshcompat"
	"github.com/dsh-project/dsh/internal/projcache"
	"github.com/dsh-project/dsh/internal/session"
)

// RungResolved names, in --debug's log, a row served from the store's
// resolved rows (backend.ResolvedRowReader): what the ladder answered when
// the row was stored, with nothing written since to what it read.
const RungResolved Rung = "resolved"

// resolvedRules is the version of the listing rules a resolved row is
// stamped with; raise it whenever a change to the ladder (of the default
// profile, with nothing live) can change a row, so that rows another dsh
// resolved are never read as current.
const resolvedRules = 1

// ResolvedRowsStamp is the resolver stamp of rows resolved by this dsh with
// the registry units: the profile the rows are exact for (the default,
// seeds), the listing rules' version and every unit's state version. Only
// rows with this stamp are read.
func ResolvedRowsStamp(units *projcache.Registry) string {
	return string(dshcompat.Seeds) + "/rules@" + strconv.Itoa(resolvedRules) + "/" + registrySignature(units)
}

// refreshChunk is how many children one resolution transaction resolves.
const refreshChunk = 512

// RefreshResolvedRows resolves and stores the rows of the subagent children
// among ids whose stored row is not current, and the catalog views
// (catalog_views.go) of ids not current, refreshChunk ids per write
// transaction of store: each transaction locks the rows, runs the ladder
// over what it reads in that transaction, as a listing of the default
// profile with nothing live would, and stamps the answers (see
// ResolvedRowsStamp); then the same for the views. A store without
// resolved rows is left alone.
func RefreshResolvedRows(ctx context.Context, store backend.Store, ids []string) error {
	if _, ok := store.(backend.ResolvedRowWriter); !ok {
		return nil
	}
	stamp := ResolvedRowsStamp(NewRegistry())
	for start := 0; start < len(ids); start += refreshChunk {
		part := ids[start:min(start+refreshChunk, len(ids))]
		err := store.Update(ctx, func(tx backend.Store) error {
			if err := refreshRows(ctx, tx, stamp, part); err != nil {
				return err
			}
			return refreshCatalogViews(ctx, tx, part)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// RefreshResolvedRowsIn is RefreshResolvedRows of ids inside tx, the write
// transaction of the writer that just changed them, the rows and the
// views each nested in a savepoint of their own: they are derived data,
// so a resolution that fails is undone and leaves them stale (a listing
// computes them) while the write it follows stands. Only cancellation is
// returned.
func RefreshResolvedRowsIn(ctx context.Context, tx backend.Store, ids []string) error {
	if _, ok := tx.(backend.ResolvedRowWriter); !ok || len(ids) == 0 {
		return nil
	}
	stamp := ResolvedRowsStamp(NewRegistry())
	for _, refresh := range []func(sp backend.Store) error{
		func(sp backend.Store) error { return refreshRows(ctx, sp, stamp, ids) },
		func(sp backend.Store) error { return refreshCatalogViews(ctx, sp, ids) },
	} {
		err := tx.Update(ctx, refresh)
		if err != nil && ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			logRefreshFailed(ctx, err)
		}
	}
	return nil
}

// refreshRows locks the rows of ids that are not current, resolves them
// with the store's own lister bound to tx and writes them.
func refreshRows(ctx context.Context, tx backend.Store, stamp string, ids []string) error {
	w, ok := tx.(backend.ResolvedRowWriter)
	if !ok {
		return nil
	}
	headers, err := w.LockResolvedRows(ctx, ids, stamp)
	if err != nil || len(headers) == 0 {
		return err
	}
	// One cold read at a time: tx is one connection.
	l := NewStoreLister(tx, nil, 1)
	recs := make([]corpus.Record, len(headers))
	for i, h := range headers {
		recs[i] = corpus.Record{Header: h, ParentID: h.Parent(), Depth: 1}
	}
	res, err := l.ResolveRecords(ctx, recs, corpus.ScopeChildren)
	if err != nil {
		return err
	}
	rows := make([]backend.ResolvedRow, 0, len(res))
	for i, r := range res {
		if r.Row == nil {
			continue // omitted: only a live child is; none is here
		}
		rows = append(rows, backend.ResolvedRow{ID: recs[i].Header.ID, Resolver: stamp, Kind: string(r.Row.Kind),
			Reason: string(r.Row.Reason), Mode: string(r.Row.Mode), Label: r.Row.Label})
	}
	return w.PutResolvedRows(ctx, rows)
}

// listResolved is ListChildren from the store's resolved rows, in the
// snapshot the ladder would read. When every row is current and nothing is
// live, the rows are the listing as they are (one index range). Otherwise
// the children are enumerated as the ladder enumerates them, and only
// those without a current row, or live, are resolved by the ladder: one
// stale row costs its own resolution, not the whole listing's. ok is false,
// and the ladder lists, when this lister is not the store's own (another
// profile, another cold reader or cache).
func (l *Lister) listResolved(ctx context.Context, parent string) (rows []Row, ok bool, err error) {
	if !l.resolvedRows || l.Cache == nil || l.Profile.Or() != dshcompat.Seeds || l.Cold != ColdReader(l.ownCold) {
		return nil, false, nil
	}
	start := time.Now()
	stamp := ResolvedRowsStamp(l.Units)
	var (
		created []int64
		// recs, when set, are the enumerated children, some of which
		// need the ladder; current holds the current rows by id.
		recs    []corpus.Record
		current map[string]Row
	)
	read := func(headers corpus.HeaderSource, live corpus.LiveSource) error {
		src, is := headers.(backend.ResolvedRowReader)
		if !is {
			return nil
		}
		c, err := corpus.Load(ctx, headers, live)
		if err != nil {
			return err
		}
		rows, created, recs, current = rows[:0], created[:0], nil, map[string]Row{}
		all := true
		err = src.ResolvedRows(ctx, parent, func(r backend.ResolvedRow) error {
			if r.Resolver != stamp {
				all = false
				return nil
			}
			row := Row{Kind: RowKind(r.Kind), ID: r.ID}
			if row.Kind == KindChild {
				row.Mode, row.Label, row.Activity, row.HasChildren = Mode(r.Mode), r.Label, ActivityInactive, r.HasChildren
			} else {
				row.Reason = Reason(r.Reason)
			}
			rows = append(rows, row)
			created = append(created, r.CreatedAt)
			current[r.ID] = row
			return nil
		})
		if err != nil {
			return err
		}
		if !all || c.HasLive() {
			// The ladder's own enumeration, live records merged.
			if recs, err = c.Children(ctx, parent); err != nil {
				return err
			}
		}
		ok = true
		return nil
	}
	if err = l.inSnapshot(ctx, read); err != nil {
		return nil, false, err
	}
	if !ok {
		return nil, false, nil
	}
	if recs != nil {
		rows, err = l.mergeResolved(ctx, recs, current, start)
		return rows, err == nil, err
	}
	sortResolved(rows, created)
	logResolved(ctx, rows, time.Since(start))
	if rows == nil {
		rows = []Row{}
	}
	return rows, true, nil
}

// mergeResolved is the listing of the enumerated children recs: a cold
// child with a current row gets it (hasChildren as enumerated), every
// other child the ladder's resolution.
func (l *Lister) mergeResolved(ctx context.Context, recs []corpus.Record, current map[string]Row, start time.Time) ([]Row, error) {
	out := make([]*Row, len(recs))
	var (
		pending []corpus.Record
		at      []int
		served  []Row
	)
	for i, rec := range recs {
		row, has := current[rec.Header.ID]
		if !has || rec.Live != nil {
			pending = append(pending, rec)
			at = append(at, i)
			continue
		}
		if row.Kind == KindChild {
			row.HasChildren = rec.HasChildren
		}
		out[i] = &row
		served = append(served, row)
	}
	logResolved(ctx, served, time.Since(start))
	if len(pending) > 0 {
		res, err := l.resolveRecords(ctx, pending, nil, corpus.ScopeChildren)
		if err != nil {
			return nil, err
		}
		for k, r := range res {
			out[at[k]] = r.Row // nil: omitted
		}
	}
	rows := make([]Row, 0, len(out))
	for _, r := range out {
		if r != nil {
			rows = append(rows, *r)
		}
	}
	return rows, nil
}

// sortResolved puts rows read in (createdAt, id) order in corpus.SortHeaders
// order: each run of equal createdAt sorted by localeCompare of the ids.
func sortResolved(rows []Row, created []int64) {
	for start := 0; start < len(rows); {
		end := start + 1
		for end < len(rows) && created[end] == created[start] {
			end++
		}
		if end-start > 1 {
			corpus.SortHeaders(rows[start:end], func(r Row) session.Header {
				return session.Header{ID: r.ID, CreatedAt: created[start]}
			})
		}
		start = end
	}
}
