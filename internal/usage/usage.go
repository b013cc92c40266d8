package usage

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/logdamage"
)

// Session is one session's own usage.
type Session struct {
	ID string
	// Models are the totals per model, in byte order of the name.
	Models []backend.ModelUsage
	Total  Totals
	// Damage is "" for a whole log; FromSeq is where a torn tail or the
	// damage starts (-1 when not known or not applicable).
	Damage  logdamage.Kind
	FromSeq int64
}

// Read returns the usage of each id, in the order of ids: from the totals
// the store keeps when src is a backend.UsageReader (no log is read), by
// reading each log as found (backend.AsFoundReader: a corpus read in
// place) otherwise. An id src does not hold is Missing.
func Read(ctx context.Context, src backend.HeaderReader, ids []string) ([]Session, error) {
	if r, ok := src.(backend.UsageReader); ok {
		return readStored(ctx, r, ids)
	}
	if r, ok := src.(backend.AsFoundReader); ok {
		return stream(ctx, r, ids)
	}
	return nil, fmt.Errorf("usage: %T keeps no usage and cannot be read as found", src)
}

func readStored(ctx context.Context, r backend.UsageReader, ids []string) ([]Session, error) {
	got := make(map[string]Session, len(ids))
	err := r.UsageOf(ctx, unique(ids), func(u backend.SessionUsage) error {
		s := Session{ID: u.ID, Models: u.Models}
		for _, m := range u.Models {
			s.Total.Add(totalsOf(m))
		}
		s.Damage, s.FromSeq = logdamage.Of(u.Refused, u.DamagedFrom, u.TornFrom)
		got[u.ID] = s
		return nil
	})
	if err != nil {
		return nil, err
	}
	return inOrder(ids, got), nil
}

func stream(ctx context.Context, r backend.AsFoundReader, ids []string) ([]Session, error) {
	got := make(map[string]Session, len(ids))
	for _, id := range unique(ids) {
		found, err := r.LogAsFound(ctx, id)
		s := Session{ID: id, FromSeq: -1}
		switch {
		case err == nil:
			s.Models = OfEvents(OwnEvents(found.Header.InheritedCut(), found.Events))
			for _, m := range s.Models {
				s.Total.Add(totalsOf(m))
			}
			s.Damage, s.FromSeq = logdamage.Of(false, found.DamagedFrom, found.TornFrom)
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case errors.Is(err, backend.ErrNotFound):
			continue
		default:
			// The log cannot be read (corrupt, a refused format, a file
			// that vanished): an import would refuse it too.
			s.Damage = logdamage.Unreadable
		}
		got[id] = s
	}
	return inOrder(ids, got), nil
}

func inOrder(ids []string, got map[string]Session) []Session {
	out := make([]Session, len(ids))
	for i, id := range ids {
		s, ok := got[id]
		if !ok {
			s = Session{ID: id, Damage: logdamage.Missing, FromSeq: -1}
		}
		out[i] = s
	}
	return out
}

func unique(ids []string) []string {
	seen := make(map[string]bool, len(ids))
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

func totalsOf(m backend.ModelUsage) Totals {
	return Totals{Messages: m.Messages, InputTokens: m.InputTokens, OutputTokens: m.OutputTokens,
		CacheReadTokens: m.CacheReadTokens, ReasoningTokens: m.ReasoningTokens}
}

func modelOf(name string, t Totals) backend.ModelUsage {
	return backend.ModelUsage{Model: name, Messages: t.Messages, InputTokens: t.InputTokens, OutputTokens: t.OutputTokens,
		CacheReadTokens: t.CacheReadTokens, ReasoningTokens: t.ReasoningTokens}
}

func sortedModels(by map[string]*Totals) []backend.ModelUsage {
	names := make([]string, 0, len(by))
	for n := range by {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]backend.ModelUsage, len(names))
	for i, n := range names {
		out[i] = modelOf(n, *by[n])
	}
	return out
}
