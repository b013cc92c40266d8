package subagent

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"github.com/dsh-project/dsh/internal/corpus"
	"github.com/dsh-project/dsh/internal/dshformat"
	"github.com/dsh-project/dsh/internal/projcache"
	"github.com/dsh-project/dsh/internal/session"
)

// SessionReader is the part of a foreign DSH corpus (a dshformat.Source) that
// cold reads need.
type SessionReader interface {
	Read(ctx context.Context, id string) (*dshformat.Session, error)
}

// NewForeignLister returns a Lister over a foreign DSH corpus read in place:
// headers are the corpus's headers, every child is inactive (no dsh process
// holds a foreign session), cold reads go through src with DSH's read-side
// validation, and cache, when not nil, is DSH's projection cache file serving
// rung 2.
func NewForeignLister(headers []session.Header, src SessionReader, cache *dshformat.ProjcacheFile, coldConcurrency int) *Lister {
	reg := NewRegistry()
	l := &Lister{
		Headers:         corpus.NewHeaderIndex(headers),
		Cold:            ForeignColdReader{Source: src},
		Units:           reg,
		ColdConcurrency: coldConcurrency,
	}
	if cache != nil {
		l.Cache = ProjcacheIdentities{File: cache, Units: reg}
	}
	return l
}

// ForeignColdReader reads a cold child from a foreign corpus the way DSH's
// non-mutating inspect does: the stored valid prefix (a torn tail cut off),
// older format-0 records converted, then the header and the whole log
// validated. It fails exactly when DSH's inspect would, which makes the row
// `unavailable`.
type ForeignColdReader struct{ Source SessionReader }

// ColdRead implements ColdReader.
func (r ForeignColdReader) ColdRead(ctx context.Context, id string, types []string) (session.Header, []session.Event, error) {
	h, events, err := ReadForeign(ctx, r.Source, id)
	if err != nil {
		return session.Header{}, nil, err
	}
	if types == nil {
		return h, events, nil
	}
	kept := make([]session.Event, 0, len(events)/4)
	for _, e := range events {
		if slices.Contains(types, e.Type) {
			kept = append(kept, e)
		}
	}
	return h, kept, nil
}

// ReadForeign reads session id from src as DSH's inspect restores it: the
// header and the valid stored prefix with older records converted. A log
// that fails DSH's validation is an error wrapping *session.ValidationError;
// the source's own errors (damage, a refused format version, an unknown id)
// are returned as they are.
func ReadForeign(ctx context.Context, src SessionReader, id string) (session.Header, []session.Event, error) {
	s, err := src.Read(ctx, id)
	if err != nil {
		return session.Header{}, nil, err
	}
	events, err := session.NormalizeLegacy(id, s.Events)
	if err != nil {
		return session.Header{}, nil, fmt.Errorf("%s: session %q failed validation: %w", s.Location, id, err)
	}
	if err := session.ValidateLog(s.Header, events); err != nil {
		return session.Header{}, nil, fmt.Errorf("%s: session %q failed validation: %w", s.Location, id, err)
	}
	return s.Header, events, nil
}

// ProjcacheIdentities serves rung 2 from DSH's own projection cache file: a
// record is used only when its identity (createdAt and cwd) matches the
// header, and only the `subagent` row at the registered state version; any
// other record or row is a miss.
type ProjcacheIdentities struct {
	File  *dshformat.ProjcacheFile
	Units *projcache.Registry
}

// CachedSubagentViews implements IdentityCache without any I/O.
func (c ProjcacheIdentities) CachedSubagentViews(ctx context.Context, headers []session.Header) (map[string]json.RawMessage, error) {
	views := make(map[string]json.RawMessage)
	for _, h := range headers {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		rows, ok := c.File.Lookup(h)
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
