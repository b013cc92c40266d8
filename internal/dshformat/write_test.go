package dshformat

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-project/dsh/internal/dshfixtures"
	"github.com/dsh-project/dsh/internal/session"
)

// DSH's path encoding examples (storage-formats §2.1).
func TestPathEncoding(t *testing.T) {
	for id, want := range map[string]string{
		"a/b": "a~002Fb", "../../etc/pwn": "..~002F..~002Fetc~002Fpwn", ".": "~002E", "..": "~002E~002E",
		"~": "~007E", "a b": "a~0020b", "\x00": "~0000", "😀": "~D83D~DE00", "Ab-9_.z": "Ab-9_.z",
	} {
		if got, err := EncodeSegment(id); err != nil || got != want {
			t.Errorf("EncodeSegment(%q) = %q, %v; want %q", id, got, err, want)
		}
	}
	if _, err := EncodeSegment(""); err == nil {
		t.Error("EncodeSegment accepted an empty id")
	}
	for cwd, want := range map[string]string{
		"/Users/qyj/work/deepseek-harness": "--Users-qyj-work-deepseek-harness--",
		`C:\work\agent`:                    "--C-work-agent--",
		"/":                                "--root--",
		"/开发/~agent":                       "--~5F00~53D1-~007Eagent--",
		"/a/b-c":                           "--a-b-c--",
		"/a-b/c":                           "--a-b-c--",
		"//x::y":                           "--x-y--",
		"/-lead":                           "--lead--",
	} {
		if got, err := ProjectKey(cwd); err != nil || got != want {
			t.Errorf("ProjectKey(%q) = %q, %v; want %q", cwd, got, err, want)
		}
	}
	long, err := ProjectKey("/" + strings.Repeat("x", 400))
	if err != nil || len(long) != 255 {
		t.Errorf("long cwd: %d characters, %v", len(long), err)
	}
	if _, err := ProjectKey(""); err == nil {
		t.Error("ProjectKey accepted an empty cwd")
	}
}

// WriteJSONL lays files out as DSH does, with private modes, and never
// overwrites an existing session file.
func TestWriteJSONLLayoutAndPublish(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "root")
	h := session.Header{ID: "a/b", CreatedAt: 7, Cwd: ptr("/home/dev/p"), ParentSession: ptr("p"), SeedLength: ptr(int64(0)), Origin: ptr("subagent"), DelegationDepth: ptr(int64(2)), AgentPreset: ptr("x")}
	events := []session.Event{event(0, "session/end-seed", `{}`)}
	path, err := WriteJSONL(ctx, dir, h, events, WriteOptions{Compression: CompressionNone})
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "--home-dev-p--", "a~002Fb", "session.jsonl"); path != want {
		t.Fatalf("path %s, want %s", path, want)
	}
	content, _ := os.ReadFile(path)
	want := `{"type":"session","version":0,"id":"a/b","createdAt":7,"cwd":"/home/dev/p","parentSession":"p","seedLength":0,"origin":"subagent","delegationDepth":2,"agentPreset":"x"}` + "\n" +
		`{"type":"session/end-seed","seq":0,"time":1000,"data":{}}` + "\n"
	if string(content) != want {
		t.Fatalf("content:\n%s\nwant:\n%s", content, want)
	}
	for p, mode := range map[string]fs.FileMode{path: 0o600, filepath.Dir(path): 0o700 | fs.ModeDir, filepath.Dir(filepath.Dir(path)): 0o700 | fs.ModeDir, dir: 0o700 | fs.ModeDir} {
		if info, err := os.Stat(p); err != nil || info.Mode() != mode {
			t.Errorf("%s: mode %v, want %v (%v)", p, info.Mode(), mode, err)
		}
	}
	if _, err := WriteJSONL(ctx, dir, h, events, WriteOptions{Compression: CompressionNone}); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("second write: %v", err)
	}
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
		t.Fatalf("session directory holds %v", entries)
	}
	noCwd := h
	noCwd.ID, noCwd.Cwd = "n", nil
	if p, err := WriteJSONL(ctx, dir, noCwd, nil, WriteOptions{}); err != nil || p != filepath.Join(dir, "_no-cwd", "n", "session.jsonl.zstd") {
		t.Fatalf("no-cwd write: %s %v", p, err)
	}
}

// Writes that DSH could not read back identically are refused.
func TestWriteJSONLRefusals(t *testing.T) {
	ctx := context.Background()
	h := session.Header{ID: "s", CreatedAt: 1}
	for name, c := range map[string]struct {
		h      session.Header
		events []session.Event
	}{
		"later version":      {session.Header{ID: "s", Version: 1}, nil},
		"empty id":           {session.Header{}, nil},
		"negative createdAt": {session.Header{ID: "s", CreatedAt: -1}, nil},
		"gap":                {h, []session.Event{event(1, "x", `{}`)}},
		"row tag as type":    {h, []session.Event{event(0, "text-chunks", `{}`)}},
		"invalid data":       {h, []session.Event{event(0, "x", `{`)}},
	} {
		if _, err := WriteJSONL(ctx, t.TempDir(), c.h, c.events, WriteOptions{}); err == nil {
			t.Errorf("%s: written", name)
		}
	}
}

// Packing matches DSH's JSONL codec: runs of at least 3 continuing deltas
// pack (unbounded), shorter runs, breaks in seq/turn/index/call id/name and
// non-canonical events stay verbatim.
func TestWriteJSONLPacking(t *testing.T) {
	tool := func(seq int64, id, name string) session.Event {
		d := `{"turn":1,"step":1,"chunk":{"type":"tool-call-delta","index":1,"id":"` + id + `",`
		if name != "" {
			d += `"name":"` + name + `",`
		}
		return session.Event{Type: typeChunk, Seq: seq, Time: 50 - seq, Data: []byte(d + `"argumentsDelta":"{"}}`)}
	}
	var events []session.Event
	events = append(events, chunkEvents(0, 2000, func(int64) string { return "a" })...) // one row, past SQLite's 1,024
	events = append(events, chunkEvents(2000, 2, func(int64) string { return "b" })...) // a new run of 2: verbatim
	events[2000].Data = bytes.Replace(events[2000].Data, []byte(`"index":0`), []byte(`"index":1`), 1)
	events[2001].Data = bytes.Replace(events[2001].Data, []byte(`"index":0`), []byte(`"index":1`), 1)
	events = append(events, tool(2002, "c1", "bash"), tool(2003, "c1", "bash"), tool(2004, "c1", "bash"), tool(2005, "c1", ""), tool(2006, "c2", ""), tool(2007, "c2", ""), tool(2008, "c2", ""))
	spaced := session.Event{Type: typeChunk, Seq: 2009, Time: 1, Data: []byte(`{"turn":1, "step":1,"chunk":{"type":"text-delta","index":0,"text":"x"}}`)}
	events = append(events, spaced, spaced, spaced)
	events[2010].Seq, events[2011].Seq = 2010, 2011
	body, err := encodeBatch(events, true)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, l := range strings.Split(strings.TrimSuffix(string(body), "\n"), "\n") {
		switch {
		case strings.HasPrefix(l, `{"type":"text-chunks"`):
			kinds = append(kinds, "text-row")
		case strings.HasPrefix(l, `{"type":"tool-call-chunks"`) && strings.Contains(l, `"name":"bash"`):
			kinds = append(kinds, "named-tool-row")
		case strings.HasPrefix(l, `{"type":"tool-call-chunks"`):
			kinds = append(kinds, "tool-row")
		default:
			kinds = append(kinds, "event")
		}
	}
	want := "text-row event event named-tool-row event tool-row event event event"
	if got := strings.Join(kinds, " "); got != want {
		t.Fatalf("lines %s\nwant  %s", got, want)
	}
	path := writeFile(t, t.TempDir(), "s/session.jsonl", append([]byte(testHeaderLine+"\n"), body...))
	s, err := readJSONLFile(context.Background(), path, false)
	if err != nil {
		t.Fatal(err)
	}
	dshfixtures.AssertSameEvents(t, "packed", s.Events, events)
}
