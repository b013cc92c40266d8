package session

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/dsh-project/dsh/internal/jsjson"
)

// surfacePlan is the validated effect of one event on the surface fold,
// computed before anything changes so a rejected event leaves no trace.
type surfacePlan struct {
	join     bool // the event becomes a surface node
	replace  bool
	startIdx int
	endIdx   int
	// rest is the comparison key of a tool/result node (see toolResultRest).
	rest string
}

// planSurface applies DSH's surface rules to the next event: eligibility and
// the surfaceOp marker, positional replace ranges over the current nodes,
// sourceEventSeqs provenance, and the tool/result rewrite restriction.
func (v *Validator) planSurface(e Event, pos int64) (surfacePlan, *ValidationError) {
	fail := func(rule, format string, args ...any) (surfacePlan, *ValidationError) {
		return surfacePlan{}, failf(pos, rule, "invalid seed event at index %d: %s", pos, fmt.Sprintf(format, args...))
	}
	if !v.rules.isSurface(e.Type) {
		if e.SurfaceOp != nil {
			return fail(RuleSurfaceOpForbidden, "session event \"%s\" is not surface-eligible and cannot carry surfaceOp", e.Type)
		}
		if e.HasSourceEventSeqs {
			return fail(RuleSourceSeqsForbidden, "session event \"%s\" is not surface-eligible and cannot carry sourceEventSeqs", e.Type)
		}
		return surfacePlan{}, nil
	}
	if e.SurfaceOp == nil {
		return fail(RuleSurfaceOpRequired, "session event \"%s\" is surface-eligible and requires a surfaceOp marker", e.Type)
	}
	plan := surfacePlan{join: true}
	var shadowed []int64
	if s, ok := jsjson.StringValue(e.SurfaceOp); !ok || s != "append" {
		op, isObj := jsjson.SplitObject(e.SurfaceOp)
		if !isObj {
			return fail(RuleSurfaceOpInvalid, "session event \"%s\" carries an invalid surfaceOp", e.Type)
		}
		start, end, ok := replaceOp(op, v.rules)
		if !ok {
			return fail(RuleSurfaceOpInvalid, "session event \"%s\" carries an invalid replace surfaceOp", e.Type)
		}
		plan.replace = true
		plan.startIdx = slices.Index(v.nodes, start)
		if plan.startIdx < 0 {
			return fail(RuleReplaceRange, "surface replace: start seq %d not found in surface", start)
		}
		plan.endIdx = slices.Index(v.nodes, end)
		if plan.endIdx < 0 {
			return fail(RuleReplaceRange, "surface replace: end seq %d not found in surface", end)
		}
		if plan.startIdx > plan.endIdx {
			return fail(RuleReplaceRange, "surface replace: start seq %d (index %d) is after end seq %d (index %d)", start, plan.startIdx, end, plan.endIdx)
		}
		shadowed = v.nodes[plan.startIdx : plan.endIdx+1]
	}
	if rule, msg := checkProvenance(e, shadowed); rule != "" {
		return fail(rule, "%s", msg)
	}
	if e.Type != TypeToolResult {
		return plan, nil
	}
	plan.rest = toolResultRest(e.Data, v.rules.toolRole == "tool")
	if !plan.replace {
		return plan, nil
	}
	if len(shadowed) != 1 {
		return fail(RuleToolResultReplaceCount, "tool/result surface replacement must rewrite exactly one current node")
	}
	original, isToolResult := v.toolResults[shadowed[0]]
	if !isToolResult {
		return fail(RuleToolResultReplaceKind, "tool/result surface replacement must target a current tool/result")
	}
	if original != plan.rest {
		return fail(RuleToolResultReplaceDiff, "tool/result surface replacement may change only content")
	}
	return plan, nil
}

// replaceOp reads the exact replace shape {op:"replace", start, end} with
// start and end non-negative safe integers.
func replaceOp(op jsjson.Object, r formatRules) (start, end int64, ok bool) {
	if !op.HasExactKeys("op", r.replaceStart, r.replaceEnd) {
		return 0, 0, false
	}
	if s, _ := jsjson.StringValue(fieldOr(op, "op")); s != "replace" {
		return 0, 0, false
	}
	start, _, okStart := jsjson.SafeInteger(fieldOr(op, r.replaceStart))
	end, _, okEnd := jsjson.SafeInteger(fieldOr(op, r.replaceEnd))
	if !okStart || !okEnd || start < 0 || end < 0 {
		return 0, 0, false
	}
	return start, end, true
}

// checkProvenance applies DSH's sourceEventSeqs rules in DSH's order and
// returns the failing rule and message, or "" when the event passes.
func checkProvenance(e Event, shadowed []int64) (rule, msg string) {
	sources := make(map[int64]bool, len(e.SourceEventSeqs))
	if e.HasSourceEventSeqs {
		if len(e.SourceEventSeqs) == 0 && e.Type != TypeAssistantMsg {
			return RuleSourceSeqsEmpty, "sourceEventSeqs must not be empty except on assistant/message"
		}
		nonEarlier := int64(-1)
		for _, s := range e.SourceEventSeqs {
			if s < 0 || s > jsjson.MaxSafeInteger {
				return RuleSourceSeqsRange, fmt.Sprintf("session event \"%s\" sourceEventSeqs must densely contain non-negative safe integers", e.Type)
			}
			sources[s] = true
			if nonEarlier < 0 && s >= e.Seq {
				nonEarlier = s
			}
		}
		if len(sources) != len(e.SourceEventSeqs) {
			return RuleSourceSeqsDuplicate, "sourceEventSeqs must not contain duplicates"
		}
		if nonEarlier >= 0 {
			return RuleSourceSeqsNotEarlier, fmt.Sprintf("sourceEventSeqs must reference earlier events: %d >= current seq %d", nonEarlier, e.Seq)
		}
	}
	var missing []string
	for _, s := range shadowed {
		if !sources[s] {
			missing = append(missing, strconv.FormatInt(s, 10))
		}
	}
	if len(missing) > 0 {
		return RuleReplaceCoverage, "surface replace: sourceEventSeqs must include every shadowed surface node; missing " + strings.Join(missing, ", ")
	}
	return "", ""
}

// toolResultRest is the part of a tool/result event's data that a
// replacement must keep: everything except the inner content of
// message.content[0]. DSH compares the two events with that content set to
// null and everything else deep-equal; the canonical text makes that
// comparison a string equality and keeps the (possibly large) tool output
// out of the validator state.
func toolResultRest(data []byte, direct bool) string {
	o, _ := jsjson.SplitObject(data)
	var b []byte
	b = appendCanonicalObject(b, o, func(b []byte, key string, val []byte) []byte {
		if key != "message" {
			return appendCanonical(b, val)
		}
		msg, _ := jsjson.SplitObject(val)
		return appendCanonicalObject(b, withKey(msg, "content"), func(b []byte, key string, val []byte) []byte {
			if key != "content" {
				return appendCanonical(b, val)
			}
			if direct {
				// A tool-role message (V4) holds its output directly.
				return append(b, "null"...)
			}
			blocks, _ := jsjson.ArrayElements(val)
			var first jsjson.Object
			if len(blocks) > 0 {
				first, _ = jsjson.SplitObject(blocks[0])
			}
			b = append(b, '[')
			b = appendCanonicalObject(b, withKey(first, "content"), func(b []byte, key string, val []byte) []byte {
				if key == "content" {
					return append(b, "null"...)
				}
				return appendCanonical(b, val)
			})
			return append(b, ']')
		})
	})
	return string(b)
}

// withKey returns o with key present (as null when it was absent), which is
// what DSH's spread-then-assign produces.
func withKey(o jsjson.Object, key string) jsjson.Object {
	if o.Has(key) {
		return o
	}
	return append(slices.Clip(o), jsjson.Member{Key: key, Value: []byte("null")})
}

// appendCanonicalObject writes o with sorted distinct keys, each value
// written by value.
func appendCanonicalObject(b []byte, o jsjson.Object, value func(b []byte, key string, val []byte) []byte) []byte {
	keys := o.Keys()
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsjson.AppendString(b, k)
		b = append(b, ':')
		b = value(b, k, fieldOr(o, k))
	}
	return append(b, '}')
}
