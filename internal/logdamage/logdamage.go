// Package logdamage names why a session's log was read only in part: the
// one vocabulary in which usage totals and search results report a log
// that is not whole, so that a script reading both branches on the same
// words.
package logdamage

// Kind says why a log was read only in part; "" is a whole log.
type Kind string

const (
	// Torn: a torn tail after the events read (a write that never
	// completed) was left out.
	Torn Kind = "torn"
	// Damaged: the log is damaged inside its committed region; only the
	// valid prefix before the damage was read.
	Damaged Kind = "damaged"
	// Unreadable: no event of the log could be read (an import refused it,
	// or the source cannot read it).
	Unreadable Kind = "unreadable"
	// Missing: a listing or scope names a session the corpus does not
	// hold.
	Missing Kind = "missing"
)

// Of is the kind of a log as a store or a reader found it — refused
// outright, damaged from damagedFrom, torn from tornFrom (each -1 when
// not) — and the seq its damage starts at (-1 when none or not known).
// Damage inside the committed region outranks a torn tail after it.
func Of(refused bool, damagedFrom, tornFrom int64) (Kind, int64) {
	switch {
	case refused:
		return Unreadable, -1
	case damagedFrom >= 0:
		return Damaged, damagedFrom
	case tornFrom >= 0:
		return Torn, tornFrom
	}
	return "", -1
}
