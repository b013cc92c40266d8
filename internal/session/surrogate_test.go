package session

import (
	"encoding/json"
	"strings"
	"testing"
)

// Every path that rewrites event data keeps a lone surrogate escape as
// JavaScript does (issue #11, defect 11): the compaction of data written
// with whitespace, the closers of an interrupted turn, legacy conversion.
func TestLoneSurrogatesSurviveRewrites(t *testing.T) {
	t.Run("compaction", func(t *testing.T) {
		e := Event{Type: TypeTurnStart, Seq: 0, Time: 1, Data: json.RawMessage("{ \"turn\" : 1, \"note\" : \"\\ud800\" }")}
		b, err := e.MarshalJSON()
		if err != nil || !strings.Contains(string(b), `"data":{"turn":1,"note":"\ud800"}`) {
			t.Fatalf("MarshalJSON = %s, %v; want the lone surrogate kept", b, err)
		}
	})
	t.Run("closers", func(t *testing.T) {
		start := Event{Type: TypeTurnStart, Seq: 0, Time: 1, Data: json.RawMessage("{\"turn\": \"\\udc00\"}")}
		closers := InterruptedTurnClosers([]Event{start})
		if len(closers) != 1 || !strings.Contains(string(closers[0].Data), `"turn":"\udc00"`) {
			t.Fatalf("closers = %+v; want turn/end with the turn value kept", closers)
		}
	})
	t.Run("legacy conversion", func(t *testing.T) {
		wrapped := "{\"turn\":1,\"message\":{ \"id\" : \"m\\ud800\", \"role\":\"user\" }}"
		e := Event{Type: "steering/message", Seq: 0, Time: 1, Data: json.RawMessage(wrapped)}
		got, changed, verr := convertLegacy("s", e, 0, func(int64) (string, bool) { return "", false })
		if verr != nil || !changed || got.Type != TypeUserMessage || string(got.Data) != `{"id":"m\ud800","role":"user"}` {
			t.Fatalf("convertLegacy = %s %s (changed %v, %v); want the message kept with its lone surrogate", got.Type, got.Data, changed, verr)
		}
	})
}
