package sqlitepersist

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dsh-project/dsh/internal/jsjson"
	"github.com/dsh-project/dsh/internal/session"
)

func ptr[T any](v T) *T { return &v }

// openStore opens a fresh store in a directory that does not exist yet.
func openStore(t testing.TB) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "data", "dsh.db")
	s, err := Open(context.Background(), path, Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s, path
}

func reopen(t testing.TB, path string) *Store {
	t.Helper()
	s, err := Open(context.Background(), path, Options{})
	if err != nil {
		t.Fatalf("Open %s: %v", path, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func openRO(t testing.TB, path string) *Store {
	t.Helper()
	s, err := OpenReadOnly(context.Background(), path, Options{})
	if err != nil {
		t.Fatalf("OpenReadOnly %s: %v", path, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func rootHeader(id string) session.Header {
	return session.Header{Version: session.FormatVersion, ID: id, CreatedAt: 1_700_000_000_000, Cwd: ptr("/work/project")}
}

// logBuilder writes DSH-shaped events with contiguous seqs.
type logBuilder struct {
	events []session.Event
	next   int64
	turn   int
	step   int
}

func newLog() *logBuilder { return &logBuilder{} }

// continueFrom starts a builder whose next event follows events.
func continueFrom(events []session.Event) *logBuilder {
	b := &logBuilder{next: int64(len(events))}
	for _, e := range events {
		if e.Type == session.TypeTurnStart {
			b.turn++
		}
	}
	return b
}

func (b *logBuilder) add(typ, data string) *logBuilder {
	b.events = append(b.events, session.Event{Type: typ, Seq: b.next, Time: 1_700_000_000_000 + b.next*10, Data: json.RawMessage(data)})
	b.next++
	return b
}

func (b *logBuilder) addSurface(typ, data string) *logBuilder {
	b.add(typ, data)
	b.events[len(b.events)-1].SurfaceOp = json.RawMessage(`"append"`)
	return b
}

func (b *logBuilder) turnStart() *logBuilder {
	b.turn++
	b.step = 0
	return b.add(session.TypeTurnStart, fmt.Sprintf(`{"turn":%d}`, b.turn))
}

func (b *logBuilder) turnEnd() *logBuilder {
	return b.add(session.TypeTurnEnd, fmt.Sprintf(`{"turn":%d,"reason":{"kind":"completed"}}`, b.turn))
}

func (b *logBuilder) stepStart() *logBuilder {
	b.step++
	return b.add(session.TypeStepStart, fmt.Sprintf(`{"turn":%d,"step":%d}`, b.turn, b.step))
}

func (b *logBuilder) stepEnd() *logBuilder {
	return b.add(session.TypeStepEnd, fmt.Sprintf(`{"turn":%d,"step":%d}`, b.turn, b.step))
}

func (b *logBuilder) user(text string) *logBuilder {
	return b.addSurface(session.TypeUserMessage, userMessageData(fmt.Sprintf("u-%d", b.next), text))
}

func userMessageData(id, text string) string {
	return `{"content":[{"type":"text","text":` + jsjson.String(text) + `}],"source":{"kind":"user"},"role":"user","id":` + jsjson.String(id) + `}`
}

// assistant writes an assistant/message with a text block and one tool-call
// block per call id.
func (b *logBuilder) assistant(text string, callIDs ...string) *logBuilder {
	blocks := []string{`{"type":"text","text":` + jsjson.String(text) + `}`}
	for _, id := range callIDs {
		blocks = append(blocks, `{"type":"tool-call","id":`+jsjson.String(id)+`,"name":"read","arguments":"{}"}`)
	}
	data := fmt.Sprintf(`{"turn":%d,"step":%d,"message":{"id":"a-%d","role":"assistant","content":[%s],"source":{"kind":"model","provider":"echo","model":"echo-1"}}}`,
		b.turn, b.step, b.next, strings.Join(blocks, ","))
	return b.addSurface(session.TypeAssistantMsg, data)
}

func (b *logBuilder) toolCall(callID string) *logBuilder {
	return b.add(session.TypeToolCall, fmt.Sprintf(`{"turn":%d,"step":%d,"callId":%s,"name":"read","arguments":"{}"}`, b.turn, b.step, jsjson.String(callID)))
}

func (b *logBuilder) toolResult(callID, output string) *logBuilder {
	data := fmt.Sprintf(`{"turn":%d,"step":%d,"message":{"id":"r-%d","role":"user","source":{"kind":"tool","callId":%s},"content":[{"type":"tool-result","toolCallId":%s,"content":[{"type":"text","text":%s}]}]}}`,
		b.turn, b.step, b.next, jsjson.String(callID), jsjson.String(callID), jsjson.String(output))
	return b.addSurface(session.TypeToolResult, data)
}

func (b *logBuilder) descriptor(childID string) *logBuilder {
	return b.add(session.TypeDescriptor, `{"version":2,"childId":`+jsjson.String(childID)+`}`)
}

func (b *logBuilder) chunk(text string) *logBuilder {
	return b.add("assistant/chunk", fmt.Sprintf(`{"turn":%d,"step":%d,"chunk":{"type":"text-delta","index":0,"text":%s}}`, b.turn, b.step, jsjson.String(text)))
}

// completeTurn writes a whole turn: a prompt, one step with an answer.
func (b *logBuilder) completeTurn(prompt string) *logBuilder {
	return b.turnStart().user(prompt).stepStart().assistant("reply to " + prompt).stepEnd().turnEnd()
}

// fileState is a file's bytes and mtime; a missing file has exists == false.
type fileState struct {
	exists bool
	sum    [32]byte
	mtime  time.Time
}

func statFile(t testing.TB, path string) fileState {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return fileState{}
	}
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fileState{exists: true, sum: sha256.Sum256(b), mtime: fi.ModTime()}
}

// dbFiles captures the database file and its write-ahead log.
func dbFiles(t testing.TB, path string) [2]fileState {
	return [2]fileState{statFile(t, path), statFile(t, path+"-wal")}
}

func dirNames(t testing.TB, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// dumpSession renders every stored row of a session (sessions row with its
// bookkeeping, events, torn tail) so two moments can be compared exactly.
func dumpSession(t testing.TB, s *Store, id string) string {
	t.Helper()
	ctx := context.Background()
	var sb strings.Builder
	dumpQuery(t, ctx, s, &sb, "SELECT * FROM sessions WHERE id = ?", id)
	dumpQuery(t, ctx, s, &sb, "SELECT rowid, * FROM events WHERE session_id = ? ORDER BY seq", id)
	dumpQuery(t, ctx, s, &sb, "SELECT * FROM torn_tails WHERE session_id = ?", id)
	return sb.String()
}

func dumpQuery(t testing.TB, ctx context.Context, s *Store, sb *strings.Builder, query string, args ...any) {
	t.Helper()
	rows, err := s.Querier().QueryContext(ctx, query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		for i, v := range vals {
			fmt.Fprintf(sb, "%s=%#v ", cols[i], v)
		}
		sb.WriteString("\n")
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
}

func mustExec(t testing.TB, s *Store, query string, args ...any) {
	t.Helper()
	if _, err := s.Querier().ExecContext(context.Background(), query, args...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

func types(events []session.Event) []string {
	var out []string
	for _, e := range events {
		out = append(out, e.Type)
	}
	return out
}
