package dshformat

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dsh-project/dsh/internal/dshfixtures"
	"github.com/dsh-project/dsh/internal/jsjson"
	"github.com/dsh-project/dsh/internal/session"
)

var testHeader = session.Header{ID: "child-1", CreatedAt: 1796050559645, Cwd: ptr("/home/dev/p"),
	ParentSession: ptr("parent"), Origin: ptr("subagent"), DelegationDepth: ptr(int64(1))}

// physicalRows lists (seq, type, ignorable, storage class of data) of a
// session's rows.
func physicalRows(t *testing.T, s *store17, id string) []string {
	t.Helper()
	rows, err := s.db.Query(`SELECT seq || ' ' || type || ' ' || coalesce(ignorable, 'null') || ' ' || typeof(data) FROM events WHERE session_id = ? ORDER BY seq`, id)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var r string
		if err := rows.Scan(&r); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

func readOne(t *testing.T, path, id string) *Session {
	t.Helper()
	s, err := openSQLite(t, path).Read(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A run of 1,027 deltas is stored as a 1,024-member row and a 3-member row
// and reads back as the same 1,027 events between the surrounding ones.
func TestSQLitePackedRowAtTheMemberLimit(t *testing.T) {
	s := newStore17(t)
	s.addSession(testHeader)
	events := []session.Event{event(0, "turn/start", `{"turn":1}`)}
	events = append(events, chunkEvents(1, 1027, func(k int64) string { return string(rune('a' + k%26)) })...)
	events = append(events, event(1028, "turn/end", `{"turn":1,"reason":{"kind":"completed"}}`))
	s.appendBatch(testHeader.ID, events)

	want := []string{"0 turn/start null text", "1 text-chunks 0 blob", "1025 text-chunks 0 text", "1028 turn/end null text"}
	if got := physicalRows(t, s, testHeader.ID); !slices.Equal(got, want) {
		t.Fatalf("rows %q, want %q", got, want)
	}
	got := readOne(t, s.path, testHeader.ID)
	dshfixtures.AssertSameEvents(t, "1027-delta run", got.Events, events)
	if got.Torn != nil {
		t.Fatalf("torn: %s", got.Torn.Reason)
	}
}

// Row data just below 4 KiB stays TEXT, just above becomes a zstd BLOB;
// both read back identically, and a large packed row is compressed too.
func TestSQLiteDataCompressionThreshold(t *testing.T) {
	s := newStore17(t)
	s.addSession(testHeader)
	base := `{"text":""}`
	below := `{"text":"` + strings.Repeat("x", 4095-len(base)) + `"}`
	above := `{"text":"` + strings.Repeat("x", 4096-len(base)) + `"}`
	events := []session.Event{event(0, "session/title", below), event(1, "session/title", above)}
	events = append(events, chunkEvents(2, 40, func(k int64) string { return strings.Repeat("y", 200) })...)
	s.appendBatch(testHeader.ID, events)
	want := []string{"0 session/title null text", "1 session/title null blob", "2 text-chunks 0 blob"}
	if got := physicalRows(t, s, testHeader.ID); !slices.Equal(got, want) {
		t.Fatalf("rows %q, want %q", got, want)
	}
	dshfixtures.AssertSameEvents(t, "threshold", readOne(t, s.path, testHeader.ID).Events, events)
}

// Packing follows DSH's size-bounded bisection: 4 members of 300,000
// characters give one 3-member row and a scalar; 3 of 400,000 stay scalar.
func TestSQLitePackedRowByteLimit(t *testing.T) {
	for _, c := range []struct {
		n, size int64
		want    []string
	}{
		{4, 300000, []string{"0 text-chunks 0 blob", "3 assistant/chunk null blob"}},
		{3, 400000, []string{"0 assistant/chunk null blob", "1 assistant/chunk null blob", "2 assistant/chunk null blob"}},
	} {
		s := newStore17(t)
		s.addSession(testHeader)
		events := chunkEvents(0, c.n, func(k int64) string { return strings.Repeat(string(rune('a'+k)), int(c.size)) })
		s.appendBatch(testHeader.ID, events)
		if got := physicalRows(t, s, testHeader.ID); !slices.Equal(got, c.want) {
			t.Fatalf("%d × %d: rows %q, want %q", c.n, c.size, got, c.want)
		}
		dshfixtures.AssertSameEvents(t, "large deltas", readOne(t, s.path, testHeader.ID).Events, events)
	}
}

// Provenance round-trips: absent stays absent, [] stays an empty list,
// descending and maximal deltas decode exactly.
func TestSQLiteProvenance(t *testing.T) {
	s := newStore17(t)
	s.addSession(testHeader)
	msg := func(seq int64, seqs []int64, has bool) session.Event {
		e := event(seq, "assistant/message", `{"turn":1,"step":1,"message":{}}`)
		e.SurfaceOp = []byte(`"append"`)
		e.SourceEventSeqs, e.HasSourceEventSeqs = seqs, has
		return e
	}
	events := []session.Event{msg(0, nil, false), msg(1, []int64{}, true), msg(2, []int64{1, 0}, true),
		msg(3, []int64{jsjson.MaxSafeInteger - 1, 0, jsjson.MaxSafeInteger - 2}, true)}
	events[3].Ignorable = true
	s.appendBatch(testHeader.ID, events)
	got := readOne(t, s.path, testHeader.ID).Events
	dshfixtures.AssertSameEvents(t, "provenance", got, events)
	if got[0].HasSourceEventSeqs || !got[1].HasSourceEventSeqs || len(got[1].SourceEventSeqs) != 0 {
		t.Fatalf("absent/empty provenance not kept apart: %+v %+v", got[0], got[1])
	}
}

// A malformed final packed row with no later turn/end is a torn tail: the
// prefix before it is returned and the marker is the row's physical seq.
// With a turn/end after it, the same row is committed damage.
func TestSQLiteTornFinalPackedRow(t *testing.T) {
	badRow := rawRow{seq: 3, typ: "text-chunks", time: 5,
		data: `{"turn":1,"step":1,"index":0,"dt":[1],"texts":["a","b","c"]}`, ignorable: 0}
	prefix := []session.Event{event(0, "turn/start", `{"turn":1}`), event(1, "step/start", `{"turn":1,"step":1}`), event(2, "turn/end", `{"turn":1,"reason":{"kind":"completed"}}`)}

	s := newStore17(t)
	s.addSession(testHeader)
	s.appendBatch(testHeader.ID, prefix)
	s.insert(testHeader.ID, badRow)
	got := readOne(t, s.path, testHeader.ID)
	dshfixtures.AssertSameEvents(t, "prefix", got.Events, prefix)
	if got.Torn == nil || got.Torn.Marker != 3 || got.Torn.FromSeq != 3 || !strings.Contains(got.Torn.Reason, "malformed text-chunks storage row") {
		t.Fatalf("torn = %+v", got.Torn)
	}
	if !bytes.Contains(got.Torn.Raw, []byte(`"seq":3,"type":"text-chunks"`)) {
		t.Fatalf("torn raw = %s", got.Torn.Raw)
	}

	s.insert(testHeader.ID, scalarRow(t, event(6, "turn/end", `{"turn":2,"reason":{"kind":"completed"}}`)))
	_, err := openSQLite(t, s.path).Read(context.Background(), testHeader.ID)
	ce := asCorrupt(t, err)
	if ce.Seq != 3 || !strings.Contains(ce.Msg, "invalid committed physical row at seq 3") {
		t.Fatalf("error = %v", err)
	}
}

// Row validation failures (storage-formats §3.4–3.7) make the row invalid;
// as the final row they are a torn tail at that row.
func TestSQLiteRowDecodeFailures(t *testing.T) {
	big := `{"turn":1,"step":1,"index":0,"dt":[0,0],"texts":["` + strings.Repeat("z", sqliteMaxRowBytes) + `","",""]}`
	bigBlob := blobEncoder.EncodeAll([]byte(big), nil)
	truncated := blobEncoder.EncodeAll([]byte(`{"text":"`+strings.Repeat("q", 5000)+`"}`), nil)
	badUTF8 := blobEncoder.EncodeAll([]byte("{\"text\":\"\xff\xfe\"}"), nil)
	rows := func(n int) string {
		return `{"turn":1,"step":1,"index":0,"dt":[` + strings.TrimSuffix(strings.Repeat("0,", n-1), ",") + `],"texts":[` + strings.TrimSuffix(strings.Repeat(`"a",`, n), ",") + `]}`
	}
	for _, c := range []struct {
		name   string
		row    rawRow
		reason string
	}{
		{"two members", rawRow{typ: "text-chunks", data: rows(2), ignorable: 0}, "2 members"},
		{"1025 members", rawRow{typ: "text-chunks", data: rows(1025), ignorable: 0}, "1025 members"},
		{"oversized text", rawRow{typ: "text-chunks", data: big, ignorable: 0}, "more than 1048576"},
		{"oversized blob", rawRow{typ: "text-chunks", data: bigBlob, ignorable: 0}, "exceeds"},
		{"undeclared-size bomb", rawRow{typ: "text-chunks", data: streamFrame(t, make([]byte, 64<<20), 1<<20), ignorable: 0}, "exceeds"},
		{"packed scalar type", rawRow{typ: "turn/start", data: `{}`, ignorable: 0}, "packed discriminator requires a chunk tag"},
		{"packed surface", rawRow{typ: "text-chunks", data: rows(3), op: `"append"`, ignorable: 0}, "packed surface fields must be null"},
		{"extra row key", rawRow{typ: "text-chunks", data: `{"turn":1,"step":1,"index":0,"dt":[0,0],"texts":["a","b","c"],"x":1}`, ignorable: 0}, "has keys"},
		{"fractional gap", rawRow{typ: "reasoning-chunks", data: `{"turn":1,"step":1,"index":0,"dt":[0.5,0],"texts":["a","b","c"]}`, ignorable: 0}, "dt[0]"},
		{"nameless tool id", rawRow{typ: "tool-call-chunks", data: `{"turn":1,"step":1,"index":0,"dt":[0,0],"id":7,"args":["a","b","c"]}`, ignorable: 0}, "id is not a string"},
		{"truncated zstd", rawRow{typ: "session/title", data: truncated[:len(truncated)-3]}, "zstd data"},
		{"invalid UTF-8 blob", rawRow{typ: "session/title", data: badUTF8}, "not valid UTF-8"},
		{"invalid JSON", rawRow{typ: "session/title", data: `{"text":`}, "data: invalid JSON"},
		{"nesting bomb", rawRow{typ: "session/title", data: strings.Repeat("[", 100000)}, "nesting"},
		{"non-canonical varint", rawRow{typ: "user/message", data: `{}`, seqs: []byte{0x80, 0x00}}, "non-canonical varint"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newStore17(t)
			s.addSession(testHeader)
			s.appendBatch(testHeader.ID, []session.Event{event(0, "turn/end", `{"turn":1,"reason":{"kind":"completed"}}`)})
			c.row.seq, c.row.time = 1, 7
			s.insert(testHeader.ID, c.row)
			got := readOne(t, s.path, testHeader.ID)
			if len(got.Events) != 1 || got.Torn == nil || got.Torn.Marker != 1 || !strings.Contains(got.Torn.Reason, c.reason) {
				t.Fatalf("events %d, torn %+v; want reason containing %q", len(got.Events), got.Torn, c.reason)
			}
		})
	}
}

// A scalar row overlapping a packed row's range breaks contiguity; an
// ignorable logical event named like a row tag is a scalar event.
func TestSQLiteContiguityAndTagNamedEvents(t *testing.T) {
	s := newStore17(t)
	s.addSession(testHeader)
	tagged := event(0, "text-chunks", `{"x":1}`)
	tagged.Ignorable = true
	s.appendBatch(testHeader.ID, append([]session.Event{tagged}, chunkEvents(1, 4, func(int64) string { return "t" })...))
	s.insert(testHeader.ID, scalarRow(t, event(3, "session/title", `{}`)))
	got := readOne(t, s.path, testHeader.ID)
	if len(got.Events) != 5 || got.Events[0].Type != "text-chunks" || !got.Events[0].Ignorable {
		t.Fatalf("events %+v", got.Events)
	}
	if got.Torn == nil || got.Torn.Marker != 3 || got.Torn.FromSeq != 5 {
		t.Fatalf("torn %+v", got.Torn)
	}
}

// Store-level refusals: a foreign application id, another schema version,
// different schema objects.
func TestSQLiteStoreRefusals(t *testing.T) {
	ctx := context.Background()
	foreign := newStoreWith(t, 12345, dshSchemaVersion, dshDDL)
	_, err := OpenDSHSQLite(ctx, foreign.path)
	if ce := asCorrupt(t, err); !strings.Contains(ce.Msg, "application id 12345, expected 1146308688") {
		t.Fatalf("foreign app id: %v", err)
	}
	for _, v := range []int64{16, 19, 20} {
		st := newStoreWith(t, dshApplicationID, v, dshDDL)
		_, err := OpenDSHSQLite(ctx, st.path)
		if uv := asRefusal(t, err); !strings.Contains(err.Error(), "unsupported DSH session format version") || uv.Session != "" {
			t.Fatalf("user_version %d: %v", v, err)
		}
	}
	extra := slices.Clone(dshDDL)
	extra[1] = strings.Replace(extra[1], "revision         INTEGER NOT NULL", "revision INTEGER NOT NULL, extra TEXT", 1)
	_, err = OpenDSHSQLite(ctx, newStoreWith(t, dshApplicationID, dshSchemaVersion, extra).path)
	if ce := asCorrupt(t, err); !strings.Contains(ce.Msg, "required schema objects") {
		t.Fatalf("extra column: %v", err)
	}
	indexed := append(slices.Clone(dshDDL), "CREATE INDEX events_type ON events(type)")
	if _, err := OpenDSHSQLite(ctx, newStoreWith(t, dshApplicationID, dshSchemaVersion, indexed).path); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("extra index: %v", err)
	}
	if _, err := OpenDSHSQLite(ctx, filepath.Join(t.TempDir(), "missing.db")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
}

// Per-session refusals and problems: a later format version lists and is
// refused on read; an invalid metadata row is a problem, not a failure of
// the whole store; an unknown id is ErrNotFound.
func TestSQLitePerSessionRefusals(t *testing.T) {
	ctx := context.Background()
	s := newStore17(t)
	s.addSession(testHeader)
	later := testHeader
	later.ID, later.Version = "later", 3
	s.addSession(later)
	s.exec(`INSERT INTO sessions (id, version, created_at, origin, incarnation, revision) VALUES ('external', 0, 1, 'external', '0b6f3a52-1c2d-4e5f-9a8b-7c6d5e4f3a2b', 1)`)
	src := openSQLite(t, s.path)
	hs, _ := src.Headers(ctx)
	if len(hs) != 2 || hs[0].ID != "child-1" || hs[1].ID != "later" || hs[1].Version != 3 {
		t.Fatalf("headers %+v", hs)
	}
	if uv := asRefusal(t, func() error { _, err := src.Read(ctx, "later"); return err }()); uv.Version != "3" || uv.Session != "later" {
		t.Fatalf("refusal %+v", uv)
	}
	p := src.Problems()
	if len(p) != 1 || p[0].ID != "external" || !strings.Contains(p[0].Err.Error(), `origin is not "subagent"`) {
		t.Fatalf("problems %+v", p)
	}
	if _, err := src.Read(ctx, "external"); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("read of a problem session: %v", err)
	}
	if _, err := src.Read(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown id: %v", err)
	}
	if got, err := src.Read(ctx, "child-1"); err != nil || len(got.Events) != 0 || got.Torn != nil {
		t.Fatalf("empty session: %+v %v", got, err)
	}
}

// Reading a store writes nothing: a read-only copy of a real store (in a
// read-only directory) reads fully and is left byte-identical, with no
// -wal, -shm or journal files created.
func TestSQLiteReadWritesNothing(t *testing.T) {
	src := filepath.Join(dshfixtures.Dir(t, "dsh-oracle/j-medium"), "sessions.db")
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "sessions.db")
	if err := os.WriteFile(path, data, 0o400); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o500); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o700) })
	sessions := readAll(t, openSQLite(t, path))
	if len(sessions) != 45 {
		t.Fatalf("read %d sessions", len(sessions))
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Fatalf("directory now holds %v", entries)
	}
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if sha256.Sum256(after) != sha256.Sum256(data) {
		t.Fatal("store bytes changed")
	}
}

// Committed transactions still in a -wal file are read: the store is then
// opened WAL-aware instead of immutable.
func TestSQLiteReadsPendingWAL(t *testing.T) {
	s := newStore17(t)
	s.exec("PRAGMA journal_mode = WAL")
	s.exec("PRAGMA wal_autocheckpoint = 0")
	s.addSession(testHeader)
	events := []session.Event{event(0, "turn/start", `{"turn":1}`), event(1, "turn/end", `{"turn":1,"reason":{"kind":"completed"}}`)}
	s.appendBatch(testHeader.ID, events)
	if info, err := os.Stat(s.path + "-wal"); err != nil || info.Size() == 0 {
		t.Fatalf("no pending WAL: %v", err)
	}
	// The store as a writer that crashed leaves it (a copy: an index still
	// mapped by a writer in this process would be shared with the reader):
	// the pending transactions are read, and the -wal and its -shm index
	// keep their bytes and modification times.
	dir := t.TempDir()
	path := filepath.Join(dir, "sessions.db")
	for _, suffix := range []string{"", "-wal", "-shm"} {
		b, err := os.ReadFile(s.path + suffix)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path+suffix, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	type fileState struct {
		data  []byte
		mtime time.Time
	}
	stateOf := func(p string) fileState {
		b, err := os.ReadFile(p)
		info, serr := os.Stat(p)
		if err != nil || serr != nil {
			t.Fatalf("%s: %v %v", p, err, serr)
		}
		return fileState{b, info.ModTime()}
	}
	before := map[string]fileState{}
	for _, suffix := range []string{"-wal", "-shm"} {
		before[suffix] = stateOf(path + suffix)
	}
	time.Sleep(10 * time.Millisecond)
	dshfixtures.AssertSameEvents(t, "wal", readOne(t, path, testHeader.ID).Events, events)
	for suffix, b := range before {
		if a := stateOf(path + suffix); !bytes.Equal(a.data, b.data) || !a.mtime.Equal(b.mtime) {
			t.Errorf("reading the store changed its %s", suffix)
		}
	}
}

// The schema-17 reader and the JSONL writer compose: a store built from
// the snapshot logs reads back as the same logs.
func TestSQLiteMatchesSnapshotLogs(t *testing.T) {
	s := newStore17(t)
	var want []*Session
	for _, dir := range []string{"acp-agent/packed-chunks", "acp-agent/subagent-fork-in-process"} {
		for _, sess := range readAll(t, openJSONL(t, dshfixtures.Dir(t, "dsh-snapshots/"+dir))) {
			h := sess.Header
			h.Cwd = ptr("/work/" + h.ID)
			sess.Header = h
			s.addSession(h)
			if len(sess.Events) > 0 {
				s.appendBatch(h.ID, sess.Events)
			}
			want = append(want, sess)
		}
	}
	got := readAll(t, openSQLite(t, s.path))
	for _, w := range want {
		g := got[w.Header.ID]
		assertSameHeader(t, w.Header.ID, g.Header, w.Header)
		dshfixtures.AssertSameEvents(t, w.Header.ID, g.Events, w.Events)
	}
}
