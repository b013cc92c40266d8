package transfer

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/corpus"
	"github.com/dsh-project/dsh/internal/dshformat"
	"github.com/dsh-project/dsh/internal/session"
)

// ExportOptions configure Export.
type ExportOptions struct {
	// Compression is the JSONL encoding; the zero value is DSH's default,
	// zstd.
	Compression dshformat.Compression
	// SkipExisting skips a session whose log (either compression) is
	// already under the target, reporting it as skipped instead of failed:
	// it resumes an interrupted export.
	SkipExisting bool
	// AsImported writes a session imported from a JSONL log with that
	// log's compression instead of Compression (the format version is
	// always the header's: a later-format session is written back as
	// session.vN.jsonl[.zstd]). It needs a source that records formats
	// (SourceFormatReader).
	AsImported bool
	// Progress, when set, is called with the number of sessions handled and
	// the total, after each one.
	Progress func(done, total int)
	// OnResult, when set, is called with each session's result as soon as
	// it is known, in order.
	OnResult func(Exported)
}

// Exported is one session's export.
type Exported struct {
	ID string
	// Path is the file written, or with Skipped the one found; "" when Err
	// is set.
	Path string
	// Skipped: with SkipExisting, the session's log was already there.
	Skipped bool
	// Damaged: the log is damaged inside its committed region; the events
	// before the damage and the stored rest were written as found.
	Damaged bool
	// Events is the number of events written.
	Events int
	// Torn is a torn tail the database keeps beside the log. It is not
	// written: a DSH JSONL file holds only whole records.
	Torn *backend.TornTail
	// Err says why the session was not written (its log has a corrupt
	// committed row, its file already exists, …).
	Err error
}

// ExportSource is what an export reads from a backend: raw logs, and the
// headers that pick the sessions (a parent's tree, or every session) and
// name their files.
type ExportSource interface {
	backend.HeaderReader
	backend.LogReader
	backend.ChildrenReader
	backend.SessionLister
}

// ExistingLogsError: without SkipExisting, some of the sessions already
// have a log under the target, so Export wrote nothing. It matches
// fs.ErrExist.
type ExistingLogsError struct {
	// Paths are the logs found, in the order of the sessions.
	Paths []string
}

func (e *ExistingLogsError) Error() string {
	return fmt.Sprintf("%d session(s) already have a log under the target (%s first)", len(e.Paths), e.Paths[0])
}

func (e *ExistingLogsError) Unwrap() error { return fs.ErrExist }

// Export writes each session of ids from st under dir in DSH's JSONL
// layout, dir/<project>/<encoded id>/session[.vN].jsonl[.zstd] in the
// session's own format version, the header and
// the stored events exactly as kept — a log that fails DSH's validation,
// ends inside a turn, or was imported damaged (prefix and stored rest) is
// written as it is, so that importing the files again gives the same
// headers and events. Nothing is written outside dir, whatever the id. A
// session whose log already exists there, in either compression, is never
// replaced or doubled: with SkipExisting it is skipped; without, Export
// looks for every session's log first and, when any is there, writes
// nothing and returns an *ExistingLogsError (a log that appears while the
// export runs still fails that one session).
// Per-session failures are reported in the results; only a failure to read
// st, existing logs, or cancellation is returned as an error.
func Export(ctx context.Context, st ExportSource, dir string, ids []string, opts ExportOptions) ([]Exported, error) {
	if !opts.SkipExisting {
		if err := refuseExisting(ctx, st, dir, ids); err != nil {
			return nil, err
		}
	}
	out := make([]Exported, 0, len(ids))
	for i, id := range ids {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		o := opts
		if formats, ok := st.(backend.SourceFormatReader); ok && opts.AsImported {
			format, err := formats.SourceFormat(ctx, id)
			if err != nil && !errors.Is(err, backend.ErrNotFound) {
				return out, err
			}
			if _, imported, ok := dshformat.ParseFormatName(format); ok {
				o.Compression = imported
			}
		}
		r, err := exportOne(ctx, st, dir, id, o)
		if err != nil {
			return out, err
		}
		out = append(out, r)
		if opts.OnResult != nil {
			opts.OnResult(r)
		}
		if opts.Progress != nil {
			opts.Progress(i+1, len(ids))
		}
	}
	return out, nil
}

// refuseExisting returns an *ExistingLogsError when any session of ids
// already has a log under dir.
func refuseExisting(ctx context.Context, st backend.HeaderReader, dir string, ids []string) error {
	var found []string
	for _, id := range ids {
		if err := ctx.Err(); err != nil {
			return err
		}
		h, err := st.Header(ctx, id)
		if errors.Is(err, backend.ErrNotFound) {
			continue // reported as that session's failure
		}
		if err != nil {
			return err
		}
		// An id with no file name (too long, say) fails when written.
		if existing, err := dshformat.ExistingLog(dir, h); err == nil && existing != "" {
			found = append(found, existing)
		}
	}
	if len(found) > 0 {
		return &ExistingLogsError{Paths: found}
	}
	return nil
}

func exportOne(ctx context.Context, st ExportSource, dir, id string, opts ExportOptions) (Exported, error) {
	r := Exported{ID: id}
	a, err := st.Audit(ctx, id)
	if errors.Is(err, backend.ErrNotFound) {
		r.Err = err
		return r, nil
	}
	if err != nil {
		return r, err
	}
	if opts.SkipExisting {
		existing, err := dshformat.ExistingLog(dir, a.Header)
		if err != nil {
			r.Err = fmt.Errorf("write session %q: %w", id, err)
			return r, nil
		}
		if existing != "" {
			r.Path, r.Skipped = existing, true
			return r, nil
		}
	}
	events := a.Events
	wo := dshformat.WriteOptions{Compression: opts.Compression}
	switch {
	case a.Damaged != nil:
		events, r.Damaged = a.Prefix, true
		wo.Trailer, wo.TrailerEncoding = a.Damaged.Raw, dshformat.RawEncoding(a.Damaged.Encoding)
	case a.Events == nil && a.ReadErr != nil:
		r.Err = fmt.Errorf("log not exported: %w", a.ReadErr)
		return r, nil
	}
	r.Torn = a.Torn
	path, err := dshformat.WriteJSONL(ctx, dir, a.Header, events, wo)
	if err != nil {
		if ctx.Err() != nil {
			return r, ctx.Err()
		}
		r.Err = err
		return r, nil
	}
	r.Path, r.Events = path, len(events)
	return r, nil
}

// Tree returns parent and the sessions below it, in pre-order with each
// parent's children in creation order: its direct children (every session that
// names it as parent, ordinary forks included), or in descendants scope the
// whole tree, so that listing parent over the exported files walks the
// same sessions as in st. A parent-link cycle is followed once.
func Tree(ctx context.Context, st backend.ChildrenReader, parent string, scope corpus.Scope) ([]string, error) {
	ids := []string{parent}
	seen := map[string]bool{parent: true}
	type frame struct {
		id    string
		depth int
	}
	stack := []frame{{parent, 0}}
	for len(stack) > 0 {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		f := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if f.id != parent {
			ids = append(ids, f.id)
		}
		if f.depth > 0 && scope == corpus.ScopeChildren {
			continue
		}
		var kids []session.Header
		if err := st.ChildrenOf(ctx, f.id, func(h session.Header) error {
			if !seen[h.ID] {
				seen[h.ID] = true
				kids = append(kids, h)
			}
			return nil
		}); err != nil {
			return nil, err
		}
		for i := len(kids) - 1; i >= 0; i-- {
			stack = append(stack, frame{kids[i].ID, f.depth + 1})
		}
	}
	return ids, nil
}

// All returns the id of every session in st, in storage order.
func All(ctx context.Context, st backend.SessionLister) ([]string, error) {
	var ids []string
	err := st.ListHeaders(ctx, func(h session.Header) error {
		ids = append(ids, h.ID)
		return nil
	})
	return ids, err
}
