// Package usage owns dsh usage: which events of a log count as token usage
// and how (the rules of docs/usage.md), each session's totals by kind and
// by model — read from what a store keeps per session (backend.UsageReader)
// or computed by streaming a corpus read in place — and the rollup of a
// parent's subtree along the tree its listing shows.
//
// A store applies the same rules in SQL (migration 0012's triggers); the
// tests hold the two to the same figures on the same logs.
package usage

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/jsjson"
	"github.com/dsh-project/dsh/internal/session"
)

// The event types whose data carries a usage object that counts: one
// model call each. assistant/chunk usage records (V0/V1) and the usage
// chunks inside a V2+ assistant/message's stream are the same call's
// figures streamed ahead of the message, so they are not counted again.
const (
	TypeAssistantMessage  = "assistant/message"
	TypeCompactionSummary = "compaction/summary"
)

// Types lists the counted event types.
var Types = []string{TypeAssistantMessage, TypeCompactionSummary}

// Totals are token counts by kind, and how many events they sum.
type Totals struct {
	Messages        int64
	InputTokens     int64
	OutputTokens    int64
	CacheReadTokens int64
	ReasoningTokens int64
}

// Add adds o to t.
func (t *Totals) Add(o Totals) {
	t.Messages += o.Messages
	t.InputTokens += o.InputTokens
	t.OutputTokens += o.OutputTokens
	t.CacheReadTokens += o.CacheReadTokens
	t.ReasoningTokens += o.ReasoningTokens
}

// IsZero reports whether nothing was counted.
func (t Totals) IsZero() bool { return t == Totals{} }

// integerLiteral is a JSON number written as an integer: no fraction, no
// exponent (SQLite's json_each types only these "integer").
var integerLiteral = regexp.MustCompile(`^-?(0|[1-9][0-9]*)$`)

// OfEvent returns the usage event e carries: the model it names ("" for
// none) and its counts, ok false when e carries none. An event counts when
// its type is one of Types, its data is a JSON object and the last member
// named "usage" is an object (JSON.parse keeps the last of duplicate keys).
// A kind counts the last member of its name when that is an integer
// literal from 0 to 2^53-1, and 0 otherwise.
func OfEvent(e session.Event) (model string, t Totals, ok bool) {
	if e.Type != TypeAssistantMessage && e.Type != TypeCompactionSummary {
		return "", Totals{}, false
	}
	data, err := jsjson.ParseObject(e.Data)
	if err != nil {
		return "", Totals{}, false
	}
	u, found := jsjson.LastMember(data, "usage")
	if !found {
		return "", Totals{}, false
	}
	kinds, err := jsjson.ParseObject(u.Value)
	if err != nil {
		return "", Totals{}, false
	}
	t = Totals{
		Messages:        1,
		InputTokens:     kind(kinds, "inputTokens"),
		OutputTokens:    kind(kinds, "outputTokens"),
		CacheReadTokens: kind(kinds, "cacheReadTokens"),
		ReasoningTokens: kind(kinds, "reasoningTokens"),
	}
	if e.Type == TypeAssistantMessage {
		return stringAt(data, "message", "source", "model"), t, true
	}
	return stringAt(data, "model"), t, true
}

func kind(members []jsjson.Member, name string) int64 {
	m, ok := jsjson.LastMember(members, name)
	if !ok || !integerLiteral.Match(m.Value) {
		return 0
	}
	v, err := strconv.ParseInt(string(m.Value), 10, 64)
	if err != nil || v < 0 || v > jsjson.MaxSafeInteger {
		return 0
	}
	return v
}

// surrogateEscape finds a \u escape of a UTF-16 surrogate, of NUL or of
// U+FDD0/U+FDD1 in JSON text. DSH's JSON.stringify writes a surrogate as an escape only
// when it is lone (not Unicode text); a model name holding one, or a NUL,
// counts as "", as PostgreSQL cannot hold either as text (its migration
// reads them as U+FDD0 and U+FDD1, so a name holding those counts as ""
// too).
var surrogateEscape = regexp.MustCompile(`\\u([dD][89a-fA-F]|0000|[fF][dD][dD][01])`)

// stringAt follows path through objects (the last member of each name) to
// a string; "" when a step is missing or not an object, or the end is not
// a string or holds a surrogate escape.
func stringAt(members []jsjson.Member, path ...string) string {
	for i, key := range path {
		m, ok := jsjson.LastMember(members, key)
		if !ok {
			return ""
		}
		if i == len(path)-1 {
			s, _ := jsjson.StringValue(m.Value)
			if surrogateEscape.Match(m.Value) || strings.ContainsAny(s, "\uFDD0\uFDD1") {
				return ""
			}
			return s
		}
		next, err := jsjson.ParseObject(m.Value)
		if err != nil {
			return ""
		}
		members = next
	}
	return ""
}

// OwnEvents are the events of a log at or after its cut (the header's
// InheritedCut): a fork's inherited prefix is its parent's usage, counted
// there, so a subtree's rollup counts every model call once.
func OwnEvents(cut int64, events []session.Event) []session.Event {
	for i, e := range events {
		if e.Seq >= cut {
			return events[i:]
		}
	}
	return nil
}

// OfEvents sums the usage of events by model, in byte order of the model.
func OfEvents(events []session.Event) []backend.ModelUsage {
	by := map[string]*Totals{}
	for _, e := range events {
		model, t, ok := OfEvent(e)
		if !ok {
			continue
		}
		if by[model] == nil {
			by[model] = &Totals{}
		}
		by[model].Add(t)
	}
	return sortedModels(by)
}
