package transfer

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/dshformat"
	"github.com/dsh-project/dsh/internal/session"
)

// StoreReader is what an import reads from another dsh database: its
// headers, its logs as stored and, when the backend keeps them, the foreign
// formats its sessions were imported from.
type StoreReader interface {
	backend.SessionLister
	backend.LogReader
}

// StoreSource offers the sessions of a dsh database as an import source, so
// that Import moves a catalog between databases (SQLite to PostgreSQL and
// back) with the same per-session decisions as a foreign corpus: each log
// is offered as its database keeps it — a log failing validation, a torn
// tail with its stored bytes, a damaged log's prefix and recorded rest —
// with the foreign format it was first imported from. name says where
// sessions were found (a path, or a URL with its password redacted). The
// source only reads st; closing it does not close st.
func StoreSource(st StoreReader, name string) dshformat.Source {
	return &storeSource{st: st, name: name}
}

type storeSource struct {
	st   StoreReader
	name string
}

func (s *storeSource) Headers(ctx context.Context) ([]session.Header, error) {
	var hs []session.Header
	err := s.st.ListHeaders(ctx, func(h session.Header) error {
		hs = append(hs, h)
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(hs, func(a, b session.Header) int { return strings.Compare(a.ID, b.ID) })
	return hs, nil
}

// ReadAsFound reads the log as its database keeps it. A committed row the
// database cannot read, outside a damaged log an import kept, is a
// *dshformat.CorruptError: the row's bytes cannot be carried over, so the
// session is reported rather than copied without them.
func (s *storeSource) ReadAsFound(ctx context.Context, id string) (*dshformat.Session, error) {
	a, err := s.st.Audit(ctx, id)
	if errors.Is(err, backend.ErrNotFound) {
		return nil, errors.Join(dshformat.ErrNotFound, err)
	}
	if err != nil {
		return nil, err
	}
	if refused := (*backend.RefusedError)(nil); errors.As(a.ReadErr, &refused) {
		// A header kept for a session an import refused: no log to copy;
		// the refusal carries over (refusalOf).
		return nil, a.ReadErr
	}
	out := &dshformat.Session{Header: a.Header, Location: s.name}
	if formats, ok := s.st.(backend.SourceFormatReader); ok {
		if out.Format, err = formats.SourceFormat(ctx, id); err != nil {
			return nil, err
		}
	}
	// The text the first import's reader replaced stays recorded in the
	// database the log moves to.
	if rec, ok := s.st.(backend.TextReplacementReader); ok {
		replaced, err := rec.TextReplacedOf(ctx, []string{id})
		if err != nil {
			return nil, err
		}
		if r, ok := replaced[id]; ok {
			out.TextReplaced = &r
		}
	}
	switch {
	case a.Damaged != nil:
		d := a.Damaged
		out.Events = a.Prefix
		out.Damage = &dshformat.Damage{
			FromSeq:  int64(len(a.Prefix)),
			Err:      &dshformat.CorruptError{Path: s.name, Session: id, Offset: -1, Frame: -1, Seq: d.FromSeq, Msg: d.Reason},
			Raw:      d.Raw,
			Encoding: dshformat.RawEncoding(d.Encoding),
			Recorded: d.Reason,
		}
		return out, nil
	case a.Events == nil && a.ReadErr != nil && errors.Is(a.ReadErr, backend.ErrCorrupt):
		return nil, &dshformat.CorruptError{Path: s.name, Session: id, Offset: -1, Frame: -1, Seq: -1,
			Msg: "a committed row cannot be read, so the log cannot be copied as stored", Err: a.ReadErr}
	}
	out.Events = a.Events
	if a.Torn != nil {
		out.Torn = &dshformat.Torn{FromSeq: a.Torn.FromSeq, Marker: a.Torn.FromSeq, Reason: a.Torn.Reason, Raw: a.Torn.Raw}
	}
	return out, nil
}

// Read is ReadAsFound refusing a damaged log, as Source's contract wants.
func (s *storeSource) Read(ctx context.Context, id string) (*dshformat.Session, error) {
	out, err := s.ReadAsFound(ctx, id)
	if err != nil {
		return nil, err
	}
	if out.Damage != nil {
		return nil, out.Damage.Err
	}
	return out, nil
}

// Problems is empty: every session a dsh database holds has a header.
func (s *storeSource) Problems() []dshformat.Problem { return nil }

// Close closes nothing: the caller opened the database and closes it.
func (s *storeSource) Close() error { return nil }
