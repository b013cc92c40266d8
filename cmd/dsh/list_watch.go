package main

import (
	"context"
	"errors"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/corpus"
	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/leases"
	"github.com/dsh-project/dsh/internal/render"
	"github.com/dsh-project/dsh/internal/report"
	"github.com/dsh-project/dsh/internal/watch"
)

// checkWatch refuses what a watch cannot do: end with an --expect verdict,
// or print a format that is not one line per row. (A corpus without a
// change signal is refused once opened.)
func checkWatch(opts listOptions, p *render.Printer) error {
	if opts.expect.given() {
		return dsherr.New(dsherr.Usage, "--watch cannot be combined with --expect, --expect-count or --expect-no-diagnostics: a watch never ends with a verdict")
	}
	switch p.Format() {
	case render.Table, render.TSV, render.Wide, render.JSONL:
		return nil
	}
	return dsherr.New(dsherr.Usage, "--watch prints one line per changed row: -o table, tsv, wide or jsonl (not %s)", p.Format())
}

// runListWatch is `dsh list --watch`: the listing, then the rows that
// change, until SIGINT or SIGTERM ends it (exit 0).
func runListWatch(ctx context.Context, a *app, src *sourceFlags, p *render.Printer, opts listOptions, scope corpus.Scope) (err error) {
	src.strict = opts.strict
	r, err := src.open(ctx, a, listFocus(opts, scope))
	if err != nil {
		return endOfWatch(ctx, err)
	}
	defer closeCorpus(r, &err)
	// Every dsh database has the signal (a --db, or a --source dsh:);
	// DSH's own corpora (files read once) have none, and reading a tree
	// of files over and over is not what a watch promises.
	signal, ok := r.Reader.(backend.ChangeNotifier)
	if !ok {
		return dsherr.New(dsherr.Usage, "--watch follows a dsh database's change signal and --source %s has none: run dsh list --source again to read it again", r.Spec)
	}
	_, herr := r.Reader.Header(ctx, opts.parent)
	if herr != nil && opts.strict {
		return r.LookupError(opts.parent, herr)
	}
	if errors.Is(herr, backend.ErrNotFound) {
		// It may yet be created: the watch goes on.
		a.warn(r.LookupError(opts.parent, herr).Error() + ": listed as empty, as DSH does; watching for it")
	}
	w := watch.Watcher{
		Signal: signal,
		Read: func(ctx context.Context) (watch.Snapshot, error) {
			// A new lister each time: nothing read before is trusted.
			l := r.Lister(opts.coldConcurrency)
			l.Profile = opts.profile
			listing, err := report.List(ctx, l, opts.parent, scope)
			if err != nil {
				return watch.Snapshot{}, err
			}
			t, err := leases.Read(ctx, r.Reader, nil)
			if err != nil {
				return watch.Snapshot{}, err
			}
			return watch.Snapshot{Rows: opts.filter.Apply(listing.Rows), Leases: t}, nil
		},
		First: func(s watch.Snapshot) error {
			switch p.Format() {
			case render.JSONL:
				added := make([]watch.Event, len(s.Rows))
				for i, row := range s.Rows {
					added[i] = watch.Event{Type: watch.Added, Row: row}
				}
				return p.WatchEvents(added, scope, nil)
			case render.Wide:
				return p.WideListing(s.Rows, scope, s.Leases.Holders())
			}
			return p.Listing(s.Rows, scope)
		},
		Changed: func(s watch.Snapshot, events []watch.Event) error {
			return p.WatchEvents(events, scope, s.Leases.Holders())
		},
	}
	return endOfWatch(ctx, w.Run(ctx))
}

// endOfWatch makes the end of ctx (SIGINT, SIGTERM) the normal end of a
// watch, whatever it interrupted.
func endOfWatch(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}
