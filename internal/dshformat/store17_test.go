package dshformat

import (
	"database/sql"
	"fmt"
	"net/url"
	"path/filepath"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/dsh-project/dsh/internal/jsjson"
	"github.com/dsh-project/dsh/internal/session"
)

// store17 builds DSH schema-17 SQLite stores for tests, laying rows out as
// DSH's SQLite backend does (storage-formats §3.3–3.7):
//
//   - tables created with DSH's canonical DDL, application_id 1146308688,
//     user_version 17, one persistence_state row with a UUID store_id;
//   - a sessions row per header (NULL for absent optionals);
//   - per append batch, every maximal run of packable chunk deltas is cut
//     into packed rows by DSH's bounded partitioning (≤ 1,024 members,
//     ≤ 1 MiB of row-data JSON, bisection when a row is too large) with
//     seq = seq0, time = time0, ignorable = 0, NULL surface columns; every
//     other event is one scalar row (ignorable 1 or NULL);
//   - data is the JSON text as TEXT below 4,096 bytes, else a zstd frame
//     as BLOB when that is smaller;
//   - source_event_seqs is NULL when absent, else the LEB128 + ZigZag
//     delta BLOB (zero-length for []).
type store17 struct {
	t    testing.TB
	db   *sql.DB
	path string
}

// dshDDL is DSH's schema text (storage-formats §3.3, with the line breaks
// of DSH's schema.sql; only whitespace-collapsed equality matters).
var dshDDL = []string{
	"CREATE TABLE persistence_state (\n  singleton INTEGER PRIMARY KEY CHECK (singleton = 1),\n  store_id  TEXT NOT NULL\n) STRICT",
	"CREATE TABLE sessions (\n  id               TEXT PRIMARY KEY,\n  version          INTEGER NOT NULL,\n  created_at       INTEGER NOT NULL,\n  cwd              TEXT,\n  parent_session   TEXT,\n  seed_length      INTEGER,\n  origin           TEXT,\n  delegation_depth INTEGER,\n  agent_preset     TEXT,\n  incarnation      TEXT NOT NULL,\n  revision         INTEGER NOT NULL\n) STRICT",
	"CREATE TABLE events (\n  session_id        TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,\n  seq               INTEGER NOT NULL,\n  type              TEXT NOT NULL,\n  time              INTEGER NOT NULL,\n  data              ANY NOT NULL,\n  source_event_seqs ANY,\n  surface_op        TEXT,\n  ignorable         INTEGER CHECK (ignorable IS NULL OR ignorable IN (0, 1)),\n  PRIMARY KEY (session_id, seq)\n) STRICT",
}

func newStore17(t testing.TB) *store17 {
	t.Helper()
	return newStoreWith(t, dshApplicationID, dshSchemaVersion, dshDDL)
}

func newStoreWith(t testing.TB, appID, userVersion int64, ddl []string) *store17 {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sessions.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	s := &store17{t: t, db: db, path: path}
	for _, stmt := range ddl {
		s.exec(stmt)
	}
	s.exec("INSERT INTO persistence_state (singleton, store_id) VALUES (1, '6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b')")
	s.exec(fmt.Sprintf("PRAGMA application_id = %d", appID))
	s.exec(fmt.Sprintf("PRAGMA user_version = %d", userVersion))
	return s
}

func (s *store17) exec(query string, args ...any) {
	s.t.Helper()
	if _, err := s.db.Exec(query, args...); err != nil {
		s.t.Fatalf("%s: %v", query, err)
	}
}

func nullable[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

func (s *store17) addSession(h session.Header) {
	s.t.Helper()
	s.exec(`INSERT INTO sessions (id, version, created_at, cwd, parent_session, seed_length, origin, delegation_depth, agent_preset, incarnation, revision)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, '0b6f3a52-1c2d-4e5f-9a8b-7c6d5e4f3a2b', 1)`,
		h.ID, h.Version, h.CreatedAt, nullable(h.Cwd), nullable(h.ParentSession), nullable(h.SeedLength),
		nullable(h.Origin), nullable(h.DelegationDepth), nullable(h.AgentPreset))
}

// rawRow is an events row with free column values, for hostile rows.
type rawRow struct {
	seq, time      int64
	typ            string
	data, seqs, op any
	ignorable      any
}

func (s *store17) insert(id string, r rawRow) {
	s.t.Helper()
	s.exec(`INSERT INTO events (session_id, seq, type, time, data, source_event_seqs, surface_op, ignorable) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		id, r.seq, r.typ, r.time, r.data, r.seqs, r.op, r.ignorable)
}

// appendBatch stores events as one DSH append batch.
func (s *store17) appendBatch(id string, events []session.Event) {
	s.t.Helper()
	base := events[0].Seq
	scalar := func(e session.Event) error {
		s.insert(id, scalarRow(s.t, e))
		return nil
	}
	err := packRuns(events, func(run []chunkDelta) error {
		for _, part := range partitionRun(run) {
			if len(part) == 1 {
				scalar(events[part[0].seq-base])
				continue
			}
			s.insert(id, rawRow{seq: part[0].seq, typ: rowTags[part[0].kind], time: part[0].time,
				data: encodeData(appendRowData(nil, part)), ignorable: 0})
		}
		return nil
	}, scalar)
	if err != nil {
		s.t.Fatal(err)
	}
}

// partitionRun is DSH's bounded partitioning of one eligible run: whole
// rows of up to 1,024 members while they fit 1 MiB, else the largest
// fitting prefix found by bisection, else one member alone; fewer than 3
// remaining members are stored alone. Single-member parts are scalars.
func partitionRun(run []chunkDelta) [][]chunkDelta {
	fits := func(r []chunkDelta) bool { return len(appendRowData(nil, r)) <= sqliteMaxRowBytes }
	var parts [][]chunkDelta
	o := 0
	for len(run)-o >= sqliteMinRun {
		hi := min(len(run)-o, sqliteMaxRun)
		if fits(run[o : o+hi]) {
			parts = append(parts, run[o:o+hi])
			o += hi
			continue
		}
		best := 0
		for low, high := sqliteMinRun, hi-1; low <= high; {
			mid := (low + high) / 2
			if fits(run[o : o+mid]) {
				best, low = mid, mid+1
			} else {
				high = mid - 1
			}
		}
		if best == 0 {
			parts = append(parts, run[o:o+1])
			o++
			continue
		}
		parts = append(parts, run[o:o+best])
		o += best
	}
	for ; o < len(run); o++ {
		parts = append(parts, run[o:o+1])
	}
	return parts
}

func scalarRow(t testing.TB, e session.Event) rawRow {
	t.Helper()
	r := rawRow{seq: e.Seq, typ: e.Type, time: e.Time, data: encodeData(e.Data)}
	if e.HasSourceEventSeqs {
		r.seqs = encodeSeqBlob(e.SourceEventSeqs)
	}
	if e.SurfaceOp != nil {
		r.op = string(e.SurfaceOp)
	}
	if e.Ignorable {
		r.ignorable = 1
	}
	return r
}

var blobEncoder = func() *zstd.Encoder {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.EncoderLevelFromZstd(3)), zstd.WithEncoderCRC(false))
	if err != nil {
		panic(err)
	}
	return enc
}()

// encodeData is DSH's data column rule: TEXT below 4 KiB, else a zstd frame
// when it is smaller than the text.
func encodeData(text []byte) any {
	if len(text) < 4096 {
		return string(text)
	}
	if c := blobEncoder.EncodeAll(text, nil); len(c) < len(text) {
		return c
	}
	return string(text)
}

// encodeSeqBlob is DSH's provenance encoding: LEB128 first value, then
// ZigZag-LEB128 deltas.
func encodeSeqBlob(seqs []int64) []byte {
	b := []byte{}
	put := func(v uint64) {
		for v >= 0x80 {
			b = append(b, byte(v)|0x80)
			v >>= 7
		}
		b = append(b, byte(v))
	}
	for i, s := range seqs {
		if i == 0 {
			put(uint64(s))
			continue
		}
		d := s - seqs[i-1]
		put(uint64(d<<1) ^ uint64(d>>63))
	}
	return b
}

// openRawDB opens a database read-only for a test's own queries.
func openRawDB(t testing.TB, path string) *sql.DB {
	t.Helper()
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", (&url.URL{Scheme: "file", Path: abs, RawQuery: "mode=ro&immutable=1"}).String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// chunkEvents builds n text deltas of one block starting at seq from.
func chunkEvents(from, n int64, text func(k int64) string) []session.Event {
	events := make([]session.Event, n)
	for k := range n {
		data := []byte(`{"turn":1,"step":1,"chunk":{"type":"text-delta","index":0,"text":`)
		data = jsjson.AppendString(data, text(k))
		data = append(data, "}}"...)
		events[k] = session.Event{Type: typeChunk, Seq: from + k, Time: 1000 + k*3 - (k%5)*2, Data: data}
	}
	return events
}

func event(seq int64, typ, data string) session.Event {
	return session.Event{Type: typ, Seq: seq, Time: 1000 + seq, Data: []byte(data)}
}
