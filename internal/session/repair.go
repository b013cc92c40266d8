package session

import (
	"slices"
	"strconv"

	"github.com/dsh-project/dsh/internal/jsjson"
)

// The texts of the synthetic tool results DSH's crash repair writes.
const (
	outcomeUnknownText = "The tool call was interrupted after it was recorded, but no result was durably recorded. Its outcome is unknown. Decide whether to retry from the tool semantics: retry only if the operation is read-only or idempotent; if it may have side effects, first verify external state or ask the user. Do not retry blindly."
	notStartedText     = "The tool call was interrupted before the Harness recorded it as started. Retry it if it is still needed."
)

// pendingCall is a tool call announced by an assistant message of the open
// turn that has no result yet.
type pendingCall struct {
	key      string // identity of the call id (its canonical JSON; "" = absent)
	id       []byte // the call id value as logged; nil = absent
	step     []byte // data.step of the announcing message; nil = absent
	callSeq  int64
	recorded bool // a tool/call event for the id was logged
}

// pendingCalls keeps insertion order like a JavaScript Map: re-registering
// an id replaces its entry in place, deleting and re-adding moves it last.
type pendingCalls []*pendingCall

func (p pendingCalls) find(key string) int {
	return slices.IndexFunc(p, func(c *pendingCall) bool { return c.key == key })
}

func callKey(raw []byte, present bool) string {
	if !present {
		return ""
	}
	return string(appendCanonical(nil, raw))
}

// InterruptedTurnClosers returns the events DSH's crash repair appends to a
// log whose last turn never ended: a tool/result for every call of the open
// turn still awaiting one (TOOL_OUTCOME_UNKNOWN when its tool/call was
// recorded, TOOL_NOT_STARTED otherwise), a step/end if a step is open, and a
// turn/end with reason "interrupted". All closers take seqs after the last
// event and reuse its time. A balanced or empty log gets none (nil).
func InterruptedTurnClosers(events []Event) []Event {
	var (
		turn, step         []byte // raw data.turn / data.step; nil = absent
		turnOpen, stepOpen bool
		pending            pendingCalls
	)
	// Every turn/start resets the whole state and a turn/end closes the
	// turn, so only the events from the last turn boundary on can leave
	// anything open: the scan starts there (a log without one has no open
	// turn).
	from := -1
	for i := len(events) - 1; i >= 0 && from < 0; i-- {
		switch events[i].Type {
		case TypeTurnEnd:
			return nil
		case TypeTurnStart:
			from = i
		}
	}
	if from < 0 {
		return nil
	}
	for _, e := range events[from:] {
		switch e.Type {
		case TypeTurnStart:
			raw, ok := jsjson.Path(e.Data, "turn")
			turn, turnOpen = rawOrNil(raw, ok), !(ok && isNull(raw))
			stepOpen, pending = false, pending[:0]
		case TypeTurnEnd:
			turnOpen, stepOpen, pending = false, false, pending[:0]
		case TypeStepStart:
			raw, ok := jsjson.Path(e.Data, "step")
			step, stepOpen = rawOrNil(raw, ok), !(ok && isNull(raw))
		case TypeStepEnd:
			stepOpen, pending = false, pending[:0]
		case TypeAssistantMsg:
			stepRaw, hasStep := jsjson.Path(e.Data, "step")
			content, _ := jsjson.Path(e.Data, "message", "content")
			blocks, _ := jsjson.ArrayElements(content)
			for _, b := range blocks {
				block, ok := jsjson.SplitObject(b)
				if t, _ := jsjson.StringValue(fieldOr(block, "type")); !ok || t != "tool-call" {
					continue
				}
				id, hasID := block.Get("id")
				c := &pendingCall{key: callKey(id, hasID), id: rawOrNil(id, hasID), step: rawOrNil(stepRaw, hasStep)}
				if i := pending.find(c.key); i >= 0 {
					pending[i] = c
				} else {
					pending = append(pending, c)
				}
			}
		case TypeToolCall:
			id, ok := jsjson.Path(e.Data, "callId")
			if i := pending.find(callKey(id, ok)); i >= 0 {
				pending[i].callSeq, pending[i].recorded = e.Seq, true
			}
		case TypeToolResult:
			id, ok := jsjson.Path(e.Data, "message", "source", "callId")
			if i := pending.find(callKey(id, ok)); i >= 0 {
				pending = slices.Delete(pending, i, i+1)
			}
		}
	}
	if !turnOpen || len(events) == 0 {
		return nil
	}
	last := events[len(events)-1]
	seq, time := last.Seq+1, last.Time
	var closers []Event
	for _, c := range pending {
		closers = append(closers, toolResultCloser(c, turn, seq, time))
		seq++
	}
	if stepOpen {
		var d []byte
		d = append(d, '{')
		d = appendField(d, "turn", turn)
		d = appendField(d, "step", step)
		d = append(trimComma(d), '}')
		closers = append(closers, Event{Type: TypeStepEnd, Seq: seq, Time: time, Data: d})
		seq++
	}
	var d []byte
	d = append(d, '{')
	d = appendField(d, "turn", turn)
	d = append(d, `"reason":{"kind":"interrupted"}}`...)
	return append(closers, Event{Type: TypeTurnEnd, Seq: seq, Time: time, Data: d})
}

func toolResultCloser(c *pendingCall, turn []byte, seq, time int64) Event {
	errName, errCode, text := "ToolNotStartedError", "TOOL_NOT_STARTED", notStartedText
	if c.recorded {
		errName, errCode, text = "ToolOutcomeUnknownError", "TOOL_OUTCOME_UNKNOWN", outcomeUnknownText
	}
	var d []byte
	d = append(d, '{')
	d = appendField(d, "turn", turn)
	d = appendField(d, "step", c.step)
	d = append(d, `"message":{"id":`...)
	d = jsjson.AppendString(d, repairResultIDPrefix+jsString(c.id, c.id != nil)+"-"+strconv.FormatInt(seq, 10))
	d = append(d, `,"role":"user","source":{"kind":"tool",`...)
	d = appendField(d, "callId", c.id)
	d = append(trimComma(d), `},"content":[{"type":"tool-result",`...)
	d = appendField(d, "toolCallId", c.id)
	d = append(d, `"isError":true,"content":[{"type":"text","text":`...)
	d = jsjson.AppendString(d, text)
	d = append(d, `}]}]},"error":{"name":`...)
	d = jsjson.AppendString(d, errName)
	d = append(d, `,"code":`...)
	d = jsjson.AppendString(d, errCode)
	d = append(d, `}}`...)
	e := Event{Type: TypeToolResult, Seq: seq, Time: time, Data: d, SurfaceOp: []byte(`"append"`)}
	if c.recorded {
		e.SourceEventSeqs, e.HasSourceEventSeqs = []int64{c.callSeq}, true
	}
	return e
}

func rawOrNil(raw []byte, present bool) []byte {
	if !present {
		return nil
	}
	return raw
}

// appendField writes `"key":value,` with value in JSON.stringify form, or
// nothing when the value is absent (JSON.stringify drops undefined members).
func appendField(d []byte, key string, raw []byte) []byte {
	if raw == nil {
		return d
	}
	d = jsjson.AppendString(d, key)
	d = append(d, ':')
	if v, err := jsjson.Compact(raw); err == nil {
		d = append(d, v...)
	} else {
		d = append(d, "null"...)
	}
	return append(d, ',')
}

func trimComma(d []byte) []byte {
	if len(d) > 0 && d[len(d)-1] == ',' {
		return d[:len(d)-1]
	}
	return d
}

// ForkPrefix returns the events up to and including the last turn/end — the
// longest prefix that does not end inside a turn — or nil when no turn ended.
func ForkPrefix(events []Event) []Event {
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Type == TypeTurnEnd {
			return slices.Clip(events[:i+1])
		}
	}
	return nil
}

// Summary is the turn structure of a log at a glance.
type Summary struct {
	Turns    int    // turn/start events
	OpenTurn bool   // the last turn/start has no turn/end after it
	LastType string // type of the last event; "" for an empty log
	LastSeq  int64  // seq of the last event; -1 for an empty log
}

// Summarize reports the turn count, whether a turn is still open, and the
// last event.
func Summarize(events []Event) Summary {
	s := Summary{LastSeq: -1}
	for _, e := range events {
		switch e.Type {
		case TypeTurnStart:
			s.Turns++
			s.OpenTurn = true
		case TypeTurnEnd:
			s.OpenTurn = false
		}
	}
	if n := len(events); n > 0 {
		s.LastType, s.LastSeq = events[n-1].Type, events[n-1].Seq
	}
	return s
}
