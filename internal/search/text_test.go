package search_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/dsh-project/dsh/internal/pgstore"
	"github.com/dsh-project/dsh/internal/pgtest"
	"github.com/dsh-project/dsh/internal/search"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/sqlitepersist"
)

func ev(seq int64, typ, data string) session.Event {
	return session.Event{Type: typ, Seq: seq, Time: 1000 + seq, Data: json.RawMessage(data)}
}

// textCases are odd shapes a log imported as found may hold.
var textCases = map[string]session.Event{
	"user":               ev(0, "user/message", `{"content":[{"type":"text","text":"Hello world"}],"source":{"kind":"user"},"role":"user","id":"u"}`),
	"user-two-blocks":    ev(0, "user/message", `{"content":[{"type":"text","text":"one"},{"type":"image","data":"xx"},{"type":"text","text":"two"}],"role":"user","id":"u"}`),
	"assistant":          ev(0, "assistant/message", `{"turn":1,"step":1,"message":{"role":"assistant","content":[{"type":"reasoning","text":"hidden"},{"type":"text","text":"shown"},{"type":"tool-call","id":"c","name":"read","arguments":"{}"}]}}`),
	"tool-result-v0":     ev(0, "tool/result", `{"turn":1,"step":1,"message":{"role":"user","content":[{"type":"tool-result","toolCallId":"c","content":[{"type":"text","text":"file body"},{"type":"image"},{"type":"text","text":"more"}]}]}}`),
	"tool-result-v4":     ev(0, "tool/result", `{"turn":1,"step":1,"message":{"role":"tool","toolCallId":"c","content":[{"type":"text","text":"direct"}]}}`),
	"duplicate-content":  ev(0, "user/message", `{"content":[{"type":"text","text":"first"}],"content":[{"type":"text","text":"last"}]}`),
	"duplicate-text":     ev(0, "user/message", `{"content":[{"type":"text","text":"a","text":"b"}]}`),
	"duplicate-type":     ev(0, "user/message", `{"content":[{"type":"text","type":"image","text":"no"},{"type":"image","type":"text","text":"yes"}]}`),
	"duplicate-message":  ev(0, "assistant/message", `{"message":{"content":[{"type":"text","text":"old"}]},"message":{"content":[{"type":"text","text":"new"}]}}`),
	"escaped":            ev(0, "user/message", `{"cont\u0065nt":[{"type":"t\u0065xt","text":"caf\u00e9 \u4e2d\u6587 \"q\" tab\there"}]}`),
	"text-not-string":    ev(0, "user/message", `{"content":[{"type":"text","text":5},{"type":"text","text":null},{"type":"text","text":"ok"}]}`),
	"empty-text":         ev(0, "user/message", `{"content":[{"type":"text","text":""},{"type":"text","text":"x"}]}`),
	"content-not-array":  ev(0, "user/message", `{"content":"plain"}`),
	"message-not-object": ev(0, "assistant/message", `{"message":[{"content":[]}]}`),
	"data-array":         ev(0, "user/message", `[{"content":[{"type":"text","text":"no"}]}]`),
	"data-string":        ev(0, "user/message", `"text"`),
	"not-json":           ev(0, "user/message", `{"content":[`),
	"block-not-object":   ev(0, "user/message", `{"content":["text",{"type":"text","text":"kept"}]}`),
	"nested-tool-result": ev(0, "tool/result", `{"message":{"content":[{"type":"tool-result","content":[{"type":"tool-result","content":[{"type":"text","text":"deep"}]},{"type":"text","text":"shallow"}]}]}}`),
	"other-type":         ev(0, "tool/call", `{"content":[{"type":"text","text":"never"}]}`),
	"cjk":                ev(0, "assistant/message", `{"message":{"content":[{"type":"text","text":"中文，测试 日本語のテキスト"}]}}`),
	"unicode-case":       ev(0, "user/message", `{"content":[{"type":"text","text":"ÉCOLE Straße ĲSSEL Ünïcödé"}]}`),
	// PostgreSQL's jsonb cannot hold the number: its text is read over json.
	"beyond-numeric": ev(0, "tool/result", `{"n":1e1000000,"message":{"content":[{"type":"text","text":"big","text":"last"}]}}`),
}

func sqliteStore(t *testing.T) (*sqlitepersist.Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "dsh.db")
	st, err := sqlitepersist.Open(context.Background(), path, sqlitepersist.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, path
}

// The stores' SQL extracts exactly the Go rule's text from every odd shape:
// SQLite's event_text_of view and PostgreSQL's dsh_event_text give what
// search.Text gives.
func TestStoresExtractTheGoText(t *testing.T) {
	ctx := context.Background()
	want := map[string]string{}
	for name, e := range textCases {
		text, ok := search.Text(e)
		if ok != (name != "other-type") {
			t.Errorf("%s: searched = %v", name, ok)
		}
		want[name] = text
	}
	// A few by hand, so that the three cannot be wrong together.
	for name, w := range map[string]string{"user-two-blocks": "one\ntwo", "assistant": "shown", "tool-result-v0": "file body\nmore",
		"tool-result-v4": "direct", "duplicate-content": "last", "duplicate-text": "b", "duplicate-type": "yes", "duplicate-message": "new",
		"escaped": "café 中文 \"q\" tab\there", "text-not-string": "ok", "empty-text": "\nx", "content-not-array": "", "data-array": "",
		"not-json": "", "block-not-object": "kept", "nested-tool-result": "shallow", "beyond-numeric": "last"} {
		if want[name] != w {
			t.Errorf("%s: Go text %q, want %q", name, want[name], w)
		}
	}
	t.Run("sqlite", func(t *testing.T) {
		st, path := sqliteStore(t)
		for name, e := range textCases {
			if _, err := st.ImportSession(ctx, session.Header{ID: "t-" + name, CreatedAt: 1}, []session.Event{e}, nil); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
		db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		for name := range textCases {
			var got string
			err := db.QueryRowContext(ctx, "SELECT text FROM event_text_of WHERE session_id = ? AND seq = 0", "t-"+name).Scan(&got)
			if name == "other-type" {
				if err != sql.ErrNoRows {
					t.Errorf("%s: %q, %v; want no row", name, got, err)
				}
				continue
			}
			if err != nil || got != want[name] {
				t.Errorf("%s: SQLite %q (%v), Go %q", name, got, err, want[name])
			}
		}
	})
	t.Run("postgres", func(t *testing.T) {
		dsn := pgtest.NewDatabase(t)
		st, err := pgstore.Open(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		for name, e := range textCases {
			var got *string
			if err := conn.QueryRow(ctx, "SELECT dsh_event_text($1, $2)", e.Type, string(e.Data)).Scan(&got); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if name == "other-type" {
				if got != nil {
					t.Errorf("%s: %q, want NULL", name, *got)
				}
				continue
			}
			if got == nil || *got != want[name] {
				t.Errorf("%s: PostgreSQL %v, Go %q", name, got, want[name])
			}
		}
	})
}
