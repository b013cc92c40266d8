package dshformat

import (
	"hash/maphash"
	"slices"

	"github.com/dsh-project/dsh/internal/session"
)

// focus is what a walk focused on one session keeps of the sessions it
// does not keep whole: enough to answer exactly which ids exist (a hash
// each, 8 bytes a session) and which sessions have a subagent child (the
// ids of those parents, which are few beside the sessions). A hash that
// says an id may exist is not an answer: the corpus is then read whole
// (Corpus.widened).
type focus struct {
	id   string
	seed maphash.Seed
	// ids holds the hash of every offered session's id, sorted once the
	// walk is done.
	ids []uint64
	// subagentParents holds the parent ids of the subagent sessions.
	subagentParents map[string]struct{}
}

// newFocusOn is a focus on session id; nil (no selector: everything is
// kept) for "".
func newFocusOn(id string) selector {
	if id == "" {
		return nil
	}
	return &focus{id: id, seed: maphash.MakeSeed(), subagentParents: map[string]struct{}{}}
}

func (f *focus) begin(d *discovery) { d.st.focus = f }
func (f *focus) added(*discovery)   {}

// keep counts session h, found by the walk and offered, and reports
// whether it is kept whole: the focus itself and its children are.
func (f *focus) keep(h session.Header, _ string) bool {
	f.ids = append(f.ids, maphash.String(f.seed, h.ID))
	if h.IsSubagent() && h.ParentSession != nil {
		f.subagentParents[*h.ParentSession] = struct{}{}
	}
	return h.ID == f.id || h.Parent() == f.id
}

func (f *focus) end(*discovery) {
	slices.Sort(f.ids)
	f.ids = slices.Clip(f.ids)
}

// ambiguous reports whether two offered sessions hash alike: the same id
// in two files (which a focus cannot tell from a collision, nor report
// by path) or two ids that collide.
func (f *focus) ambiguous() bool {
	for i := 1; i < len(f.ids); i++ {
		if f.ids[i] == f.ids[i-1] {
			return true
		}
	}
	return false
}

// mayHold reports whether id may be an offered session's: false is
// exact, true only likely.
func (f *focus) mayHold(id string) bool {
	_, ok := slices.BinarySearch(f.ids, maphash.String(f.seed, id))
	return ok
}

// hasSubagentChild reports exactly whether a subagent session names
// parent as its parent.
func (f *focus) hasSubagentChild(parent string) bool {
	_, ok := f.subagentParents[parent]
	return ok
}

// sourceView is a Source's header index as it stands: n headers by
// position in id order, and the focus when it holds only one session's
// (and its children's). partial: it holds only some sessions (a focus's
// or a chunk's).
type sourceView struct {
	n       int
	at      func(int) session.Header
	focus   *focus
	partial bool
}
