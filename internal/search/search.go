package search

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/logdamage"
	"github.com/dsh-project/dsh/internal/session"
)

// Options limit a search.
type Options struct {
	// Sessions limits the search to these ids (a --parent subtree); nil
	// searches every session.
	Sessions []string
	// Types limits the event types (each one of Types); nil: all of them.
	Types []string
	// Since (inclusive) and Until (exclusive) bound the event time, in
	// milliseconds since the epoch; nil for no bound.
	Since, Until *int64
	// Limit is the most hits returned, best first; 0 for all.
	Limit int
}

// Hit is one matching event as dsh search prints it (and an API serves
// it).
type Hit struct {
	SessionID string `json:"sessionId"`
	Seq       int64  `json:"seq"`
	Time      int64  `json:"time"`
	Type      string `json:"type"`
	// Snippet is the text around the first match, each matching word
	// between MarkStart and MarkEnd.
	Snippet string `json:"snippet"`
	// Marks are the snippet's highlighted words, markers included (not
	// part of the JSON: the markers say it there).
	Marks []Span `json:"-"`
}

// DamagedLog is a session of the searched scope whose log is not whole.
type DamagedLog struct {
	ID     string         `json:"id"`
	Damage logdamage.Kind `json:"damage"`
	// FromSeq is where a torn tail or the damage begins; nil otherwise.
	FromSeq *int64 `json:"fromSeq,omitempty"`
}

// Result is a search's hits, best first, and the damaged logs of its
// scope.
type Result struct {
	Hits    []Hit
	Damaged []DamagedLog
}

// Run searches src for q: through the index a store keeps
// (backend.SearchReader) when it has one, by reading each log as found
// (backend.AsFoundReader: a corpus read in place) otherwise, with the same
// tokens and matches; only the ranking differs (docs/search.md).
func Run(ctx context.Context, src backend.Reader, q *Query, o Options) (*Result, error) {
	for _, t := range o.Types {
		if !IsType(t) {
			return nil, fmt.Errorf("search: %q is not a searched event type", t)
		}
	}
	if r, ok := src.(backend.SearchReader); ok {
		return runStored(ctx, r, q, o)
	}
	if r, ok := src.(backend.AsFoundReader); ok {
		return stream(ctx, src, r, q, o)
	}
	return nil, fmt.Errorf("search: %T keeps no index and cannot be read as found", src)
}

func runStored(ctx context.Context, r backend.SearchReader, q *Query, o Options) (*Result, error) {
	res := &Result{}
	m := NewMatcher(q, FoldDiacritics)
	req := backend.SearchRequest{FTS5: q.FTS5(), TSQuery: q.TSQuery(), Sessions: o.Sessions, Types: o.Types,
		Since: o.Since, Until: o.Until, Limit: o.Limit}
	err := r.Search(ctx, req, func(h backend.SearchHit) error {
		e := session.Event{Type: h.Type, Seq: h.Seq, Time: h.Time, Data: h.Data}
		text, _ := Text(e)
		toks := Tokens(text, FoldDiacritics)
		hit := make([]bool, len(toks))
		m.Match(toks, hit)
		snippet, marks := SnippetMarks(text, toks, hit)
		res.Hits = append(res.Hits, Hit{SessionID: h.SessionID, Seq: h.Seq, Time: h.Time, Type: h.Type, Snippet: snippet, Marks: marks})
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = r.DamagedLogs(ctx, o.Sessions, func(d backend.LogDamage) error {
		if d.Missing {
			res.Damaged = append(res.Damaged, DamagedLog{ID: d.ID, Damage: logdamage.Missing})
			return nil
		}
		res.Damaged = append(res.Damaged, damageOf(d.ID, d.Refused, d.DamagedFrom, d.TornFrom))
		return nil
	})
	return res, err
}

// damageOf is the entry of a log that is not whole.
func damageOf(id string, refused bool, damagedFrom, tornFrom int64) DamagedLog {
	d := DamagedLog{ID: id}
	var from int64
	if d.Damage, from = logdamage.Of(refused, damagedFrom, tornFrom); from >= 0 {
		d.FromSeq = &from
	}
	return d
}

// scored is a hit of the streaming search with its score: how many words
// it highlights.
type scored struct {
	Hit
	score int
}

func stream(ctx context.Context, src backend.SessionLister, r backend.AsFoundReader, q *Query, o Options) (*Result, error) {
	ids := o.Sessions
	if ids == nil {
		err := src.ListHeaders(ctx, func(h session.Header) error {
			ids = append(ids, h.ID)
			return nil
		})
		if err != nil {
			return nil, err
		}
		sort.Strings(ids)
	}
	types := map[string]bool{}
	for _, t := range o.Types {
		types[t] = true
	}
	m := NewMatcher(q, FoldDiacritics)
	res := &Result{}
	var hits []scored
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			continue
		}
		seen[id] = true
		found, err := r.LogAsFound(ctx, id)
		switch {
		case err == nil:
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case errors.Is(err, backend.ErrNotFound):
			res.Damaged = append(res.Damaged, DamagedLog{ID: id, Damage: logdamage.Missing})
			continue
		default:
			// The log cannot be read: an import would refuse it too.
			res.Damaged = append(res.Damaged, DamagedLog{ID: id, Damage: logdamage.Unreadable})
			continue
		}
		if found.DamagedFrom >= 0 || found.TornFrom >= 0 {
			res.Damaged = append(res.Damaged, damageOf(id, false, found.DamagedFrom, found.TornFrom))
		}
		cut := found.Header.InheritedCut()
		for _, e := range found.Events {
			if e.Seq < cut || (len(types) > 0 && !types[e.Type]) ||
				(o.Since != nil && e.Time < *o.Since) || (o.Until != nil && e.Time >= *o.Until) {
				continue
			}
			text, ok := Text(e)
			if !ok {
				continue
			}
			toks := Tokens(text, FoldDiacritics)
			hit := make([]bool, len(toks))
			if !m.Match(toks, hit) {
				continue
			}
			n := 0
			for _, h := range hit {
				if h {
					n++
				}
			}
			snippet, marks := SnippetMarks(text, toks, hit)
			hits = append(hits, scored{Hit: Hit{SessionID: id, Seq: e.Seq, Time: e.Time, Type: e.Type, Snippet: snippet, Marks: marks}, score: n})
		}
	}
	sort.SliceStable(hits, func(i, j int) bool { return hits[i].score > hits[j].score })
	for i, h := range hits {
		if o.Limit > 0 && i == o.Limit {
			break
		}
		res.Hits = append(res.Hits, h.Hit)
	}
	return res, nil
}
