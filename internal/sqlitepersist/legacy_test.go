package sqlitepersist

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/dsh-project/dsh/internal/session"
)

// An imported log in an older format-0 shape (a steering/message) is kept
// as found, but reads convert it the way DSH does on every read, so it
// inspects as a valid log with the converted user/message.
func TestInspectConvertsLegacyRecordsWithoutRewriting(t *testing.T) {
	ctx := context.Background()
	st, _ := openStore(t)
	events := []session.Event{
		{Type: session.TypeTurnStart, Seq: 0, Time: 1, Data: json.RawMessage(`{"turn":1}`)},
		{Type: "steering/message", Seq: 1, Time: 2, Data: json.RawMessage(`{"turn":1,"content":[{"type":"text","text":"x"}],"source":{"kind":"user"}}`), SurfaceOp: json.RawMessage(`"append"`)},
		{Type: session.TypeTurnEnd, Seq: 2, Time: 3, Data: json.RawMessage(`{"turn":1,"reason":{"kind":"completed"}}`)},
	}
	if _, err := st.ImportSession(ctx, rootHeader("legacy"), events, nil); err != nil {
		t.Fatal(err)
	}
	in, err := st.Inspect(ctx, "legacy")
	if err != nil {
		t.Fatalf("Inspect of a legacy log: %v", err)
	}
	if got := in.Events[1]; got.Type != session.TypeUserMessage {
		t.Fatalf("event 1 type = %s, want user/message", got.Type)
	}
	var msg struct {
		ID   string `json:"id"`
		Role string `json:"role"`
	}
	if err := json.Unmarshal(in.Events[1].Data, &msg); err != nil || msg.ID != "legacy-message:legacy:1" || msg.Role != "user" {
		t.Fatalf("converted message = %s (%v)", in.Events[1].Data, err)
	}
	var stored string
	if err := st.Querier().QueryRowContext(ctx, "SELECT type FROM events WHERE session_id = 'legacy' AND seq = 1").Scan(&stored); err != nil || stored != "steering/message" {
		t.Fatalf("stored type = %q (%v), want the record kept as found", stored, err)
	}
}
