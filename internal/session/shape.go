package session

import (
	"slices"

	"github.com/dsh-project/dsh/internal/jsjson"
)

// Message-shape checks. DSH runs them on every stored event it reads, with
// the subject "session event at seq N"; the texts below are DSH's.

// surfaceTypes are the only event types that join the model-visible surface.
var surfaceTypes = []string{TypeUserMessage, TypeAssistantMsg, TypeToolResult}

func isSurfaceType(t string) bool { return slices.Contains(surfaceTypes, t) }

func messageRule(t string) string {
	switch t {
	case TypeUserMessage:
		return RuleUserMessageShape
	case TypeAssistantMsg:
		return RuleAssistantMessageShape
	}
	return RuleToolResultShape
}

// checkMessageShape validates the message carried by a user/message,
// assistant/message or tool/result event; other types pass.
func checkMessageShape(r formatRules, e Event, pos int64) *ValidationError {
	if e.Type == TypeSystemMessage && r.isSurface(e.Type) {
		return checkSystemMessage(e, pos)
	}
	if !isSurfaceType(e.Type) {
		return nil
	}
	rule := messageRule(e.Type)
	fail := func(problem string) *ValidationError {
		return failf(pos, rule, "session event at seq %d %s", e.Seq, problem)
	}
	msgRaw := []byte(e.Data)
	if e.Type != TypeUserMessage {
		var ok bool
		if msgRaw, ok = jsjson.Path(e.Data, "message"); !ok {
			return fail("lacks an identified message")
		}
	}
	msg, ok := jsjson.SplitObject(msgRaw)
	if !ok || !nonEmptyString(fieldOr(msg, "id")) {
		return fail("lacks an identified message")
	}
	wantRole := "user"
	switch {
	case e.Type == TypeAssistantMsg:
		wantRole = "assistant"
	case e.Type == TypeToolResult:
		wantRole = r.toolRole
	}
	if role, ok := jsjson.StringValue(fieldOr(msg, "role")); !ok || role != wantRole {
		return fail(`message must have role "` + wantRole + `"`)
	}
	source, ok := jsjson.SplitObject(fieldOr(msg, "source"))
	if !ok || !nonEmptyString(fieldOr(source, "kind")) {
		return fail("message has invalid source")
	}
	content, ok := jsjson.ArrayElements(fieldOr(msg, "content"))
	if !ok {
		return fail("message has invalid content")
	}
	kind, _ := jsjson.StringValue(fieldOr(source, "kind"))
	switch e.Type {
	case TypeAssistantMsg:
		if kind != "model" || !hasProviderModel(source) {
			return fail("message must have model source")
		}
	case TypeToolResult:
		if r.toolRole == "tool" {
			return checkToolRoleResult(msg, fail)
		}
		callID, ok := jsjson.StringValue(fieldOr(source, "callId"))
		if kind != "tool" || !ok || callID == "" {
			return fail("message must have tool source")
		}
		if len(content) != 1 {
			return fail("message must contain one tool-result block")
		}
		block, ok := jsjson.SplitObject(content[0])
		if !ok {
			return fail("message must contain one tool-result block")
		}
		if t, _ := jsjson.StringValue(fieldOr(block, "type")); t != "tool-result" || !isArray(fieldOr(block, "content")) {
			return fail("message must contain one tool-result block")
		}
		if id, ok := jsjson.StringValue(fieldOr(block, "toolCallId")); !ok || id != callID {
			return fail("message has mismatched tool call ids")
		}
	}
	return nil
}

func hasProviderModel(o jsjson.Object) bool {
	return nonEmptyString(fieldOr(o, "provider")) && nonEmptyString(fieldOr(o, "model"))
}

// checkRequestHeader is DSH's seed check of a request/header event: the
// config names a provider and model, reasoningEffort (if present) is a
// non-empty string, and adapterDefaults (if present) marks only
// reasoningEffort/maxTokens, with true, for fields the config has.
func checkRequestHeader(e Event, pos int64) *ValidationError {
	if e.Type != "request/header" {
		return nil
	}
	fail := func(problem string) *ValidationError {
		return failf(pos, RuleRequestHeaderShape, "seed request/header at index %d %s", pos, problem)
	}
	header, _ := jsjson.Path(e.Data, "header")
	headerObj, isObj := jsjson.SplitObject(header)
	config, _ := jsjson.SplitObject(fieldOr(headerObj, "config"))
	if !isObj || !hasProviderModel(config) {
		return fail("lacks provider/model")
	}
	if raw, present := config.Get("reasoningEffort"); present && !nonEmptyString(raw) {
		return fail("has an invalid reasoningEffort")
	}
	raw, present := headerObj.Get("adapterDefaults")
	if !present {
		return nil
	}
	defaults, ok := jsjson.SplitObject(raw)
	if !ok || !defaults.HasOnlyKeys(nil, "reasoningEffort", "maxTokens") {
		return fail("has invalid adapterDefaults")
	}
	for _, m := range defaults {
		if !isTrue(fieldOr(defaults, m.Key)) || !config.Has(m.Key) {
			return fail("has invalid adapterDefaults")
		}
	}
	return nil
}

// checkLegacyVocabulary rejects the v0 vocabulary this build cannot replay.
func checkLegacyVocabulary(id string, e Event, pos int64) *ValidationError {
	switch e.Type {
	case "request/header-delta", "mode/set":
		return failf(pos, RuleLegacyVocabulary, "session \"%s\" contains unsupported legacy %s event at seq %d", id, e.Type, e.Seq)
	case "request/header":
		if reason, ok := jsjson.Path(e.Data, "reason"); ok {
			if s, _ := jsjson.StringValue(reason); s == "fallback" {
				return failf(pos, RuleLegacyVocabulary, `session "%s" contains unsupported legacy request/header reason "fallback" at seq %d`, id, e.Seq)
			}
		}
	}
	return nil
}
