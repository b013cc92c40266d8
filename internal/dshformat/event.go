package dshformat

import (
	"errors"
	"fmt"

	"github.com/dsh-project/dsh/internal/jsjson"
	"github.com/dsh-project/dsh/internal/session"
)

// The envelope keys DSH defines for a logical event.
const (
	keyType            = "type"
	keySeq             = "seq"
	keyTime            = "time"
	keyData            = "data"
	keySourceEventSeqs = "sourceEventSeqs"
	keySurfaceOp       = "surfaceOp"
	keyIgnorable       = "ignorable"
)

// eventFromMembers builds the logical event stored as a JSON object whose
// seq the caller has already checked. It works on the members the scanner
// has already parsed (session.Event.UnmarshalJSON would parse the line a
// second time) and puts data and surfaceOp in JSON.stringify form. DSH accepts such an object into the
// log and leaves the envelope checks to Session construction; values that a
// session.Event cannot carry (a non-string type, a fractional time, an
// ignorable that is not true …) would fail those checks, so they are
// reported here as errors. Unknown keys are recorded, not rejected.
func eventFromMembers(members []jsjson.Member, seq int64) (session.Event, error) {
	e := session.Event{Seq: seq}
	seen := make(map[string]bool, len(members))
	for _, m := range members {
		switch m.Key {
		case keyType, keySeq, keyTime, keyData, keySourceEventSeqs, keySurfaceOp, keyIgnorable:
		default:
			if !seen[m.Key] {
				e.UnknownKeys = append(e.UnknownKeys, m.Key)
			}
		}
		seen[m.Key] = true
	}
	t, _ := jsjson.LastMember(members, keyType)
	var ok bool
	if e.Type, ok = jsjson.StringValue(t.Value); !ok {
		return e, errors.New(`event "type" is not a string`)
	}
	tm, _ := jsjson.LastMember(members, keyTime)
	if e.Time, _, ok = jsjson.SafeInteger(tm.Value); !ok {
		return e, fmt.Errorf("event %q (seq %d): \"time\" is not a safe integer", e.Type, seq)
	}
	d, ok := jsjson.LastMember(members, keyData)
	if !ok {
		return e, fmt.Errorf("event %q (seq %d) has no \"data\"", e.Type, seq)
	}
	e.Data = jsjson.Canonical(d.Value, d.Canonical)
	if m, ok := jsjson.LastMember(members, keySourceEventSeqs); ok {
		seqs, err := decodeSeqList(m.Value)
		if err != nil {
			return e, fmt.Errorf("event %q (seq %d): %w", e.Type, seq, err)
		}
		e.SourceEventSeqs, e.HasSourceEventSeqs = seqs, true
	}
	if m, ok := jsjson.LastMember(members, keySurfaceOp); ok {
		e.SurfaceOp = jsjson.Canonical(m.Value, m.Canonical)
	}
	if m, ok := jsjson.LastMember(members, keyIgnorable); ok {
		if string(m.Value) != "true" {
			return e, fmt.Errorf("event %q (seq %d): \"ignorable\" is present but not true", e.Type, seq)
		}
		e.Ignorable = true
	}
	return e, nil
}

// errRangeSeqs is a sourceEventSeqs element that is an [start, end] pair,
// a later-format compaction known only from research.
var errRangeSeqs = errors.New(`"sourceEventSeqs" holds a range pair`)

func decodeSeqList(raw []byte) ([]int64, error) {
	elems, ok := jsjson.ArrayElements(raw)
	if !ok {
		return nil, errors.New(`"sourceEventSeqs" is not an array`)
	}
	seqs := make([]int64, len(elems))
	for i, el := range elems {
		if _, isPair := jsjson.ArrayElements(el); isPair {
			return nil, errRangeSeqs
		}
		n, _, ok := jsjson.SafeInteger(el)
		if !ok || n < 0 {
			return nil, fmt.Errorf(`"sourceEventSeqs"[%d] is not a non-negative safe integer`, i)
		}
		seqs[i] = n
	}
	return seqs, nil
}
