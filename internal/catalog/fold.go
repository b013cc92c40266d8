package catalog

import (
	"github.com/dsh-project/dsh/internal/jsjson"
	"github.com/dsh-project/dsh/internal/session"
)

// Entry is one element of DSH's catalog view (subagentCatalogEntries): a
// fact's child, in the order the facts were appended.
type Entry struct {
	ID        string
	CreatedAt int64
	Mode      Mode
	Label     *string // nil: the fact has no label
}

// MarshalJSON is the view entry as DSH's listChildren returns it: keys id,
// createdAt, mode, label (when present).
func (e Entry) MarshalJSON() ([]byte, error) {
	b := []byte(`{"id":`)
	b = jsjson.AppendString(b, e.ID)
	b = append(b, `,"createdAt":`...)
	b = jsjson.AppendInt(b, e.CreatedAt)
	b = append(b, `,"mode":`...)
	b = jsjson.AppendString(b, string(e.Mode))
	if e.Label != nil {
		b = append(b, `,"label":`...)
		b = jsjson.AppendString(b, *e.Label)
	}
	return append(b, '}'), nil
}

func entryOf(f Fact) Entry {
	return Entry{ID: f.ChildID, CreatedAt: f.ChildCreatedAt, Mode: f.Mode, Label: f.Label}
}

// Own reports whether an event belongs to the log's own suffix, whose facts
// the catalog interprets: seq at or after the inherited cut. Facts copied
// from a fork's ancestor (below the cut) are never read.
func Own(e session.Event, cut int64) bool { return e.Seq >= cut }

// Fold is DSH's subagentCatalog projection over a log: every own
// `subagent/catalog` fact, parsed strictly, appended in event order (no
// update, removal or dedupe: a second fact for a child is a second entry).
// An invalid own fact refuses the whole fold (*Error at its seq): DSH then
// cannot restore the parent's projections. A log with no own facts folds to
// an empty view, not nil.
func Fold(events []session.Event, cut int64) ([]Entry, error) {
	view := []Entry{}
	for _, e := range events {
		if e.Type != session.TypeCatalog || !Own(e, cut) {
			continue
		}
		f, err := parse(e.Data, true)
		if err != nil {
			return nil, wrapAt(err, e.Seq)
		}
		view = append(view, entryOf(f))
	}
	return view, nil
}

// Admit is DSH's format admission of a persisted V4 log's catalog: every
// own fact must pass catalogFact (extra keys tolerated) and no child may be
// named twice ("duplicate catalog child X"). A log it refuses cannot be
// opened at all.
func Admit(events []session.Event, cut int64) error {
	seen := map[string]bool{}
	for _, e := range events {
		if e.Type != session.TypeCatalog || !Own(e, cut) {
			continue
		}
		f, err := parse(e.Data, false)
		if err != nil {
			return wrapAt(err, e.Seq)
		}
		if seen[f.ChildID] {
			return &Error{Problem: ProblemDuplicate, Seq: e.Seq, ChildID: f.ChildID, Detail: "duplicate catalog child " + jsjson.String(f.ChildID)}
		}
		seen[f.ChildID] = true
	}
	return nil
}

// NativeFormat is the first session format whose logs carry their catalog
// natively; older parents get theirs from the V3→V4 back-fill.
const NativeFormat = 4

// View is the catalog DSH 0.1.7 and later read for a parent whose log is
// events (of format version, with inherited cut cut): for a V4 log, its own
// facts after admission; for a V0–V3 log, its own facts plus what the V3→V4
// back-fill appends from the evidence of its children (see Backfill).
// createdAt is the parent header's, the back-fill's time when the log is
// empty. Any refusal is an *Error: the parent is then unreadable.
func View(version int64, events []session.Event, cut, createdAt int64, evidence []Evidence) ([]Entry, error) {
	if version >= NativeFormat {
		if err := Admit(events, cut); err != nil {
			return nil, err
		}
		return Fold(events, cut)
	}
	added, err := Backfill(events, cut, createdAt, evidence)
	if err != nil {
		return nil, err
	}
	if len(added) == 0 {
		return Fold(events, cut)
	}
	all := make([]session.Event, 0, len(events)+len(added))
	return Fold(append(append(all, events...), added...), cut)
}
