package projcache_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/projcache"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/sqlitepersist"
)

// openDB opens a real dsh store (all migrations, 0002 included) in a temp
// dir: the backend the cache keeps its records in.
func openDB(t testing.TB) *sqlitepersist.Store {
	t.Helper()
	st, err := sqlitepersist.Open(context.Background(), filepath.Join(t.TempDir(), "dsh.db"), sqlitepersist.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func ptr[T any](v T) *T { return &v }

// childHeader is a header with every witness field set.
func childHeader(id string) session.Header {
	return session.Header{
		Version: 0, ID: id, CreatedAt: 1789000001000,
		Cwd: ptr("/home/dev/p"), ParentSession: ptr("parent"), SeedLength: ptr(int64(4)),
		Origin: ptr("subagent"), DelegationDepth: ptr(int64(1)), AgentPreset: ptr("reviewer"),
	}
}

// memStore is the session logs a test's ReadFunc serves.
type memStore map[string]storedLog

type storedLog struct {
	h      session.Header
	events []session.Event
}

func (m memStore) read(_ context.Context, id string) (session.Header, []session.Event, error) {
	s, ok := m[id]
	if !ok {
		return session.Header{}, nil, fmt.Errorf("read %s: %w", id, projcache.ErrSessionGone)
	}
	return s.h, s.events, nil
}

// folded folds a log with reg and returns its checkpoint and watermark.
func folded(t *testing.T, reg *projcache.Registry, log []session.Event) (projcache.Checkpoint, int64) {
	t.Helper()
	f := reg.NewFold()
	f.Apply(log...)
	cp, err := f.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	return cp, f.AsOfSeq()
}

func TestLookupHit(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	reg := registry(t, countUnit{ver: 1})
	c := projcache.NewCache(db, reg)
	h := childHeader("c1")
	if l, err := c.Lookup(ctx, h); err != nil || l.Status != projcache.Miss {
		t.Fatalf("empty cache: %v %v", l.Status, err)
	}
	cp, asOf := folded(t, reg, events("turn/start", descA, "turn/end"))
	if err := c.Put(ctx, h, asOf, cp); err != nil {
		t.Fatal(err)
	}
	l, err := c.Lookup(ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	if l.Status != projcache.Hit || l.AsOfSeq != 2 || len(l.Dropped) != 0 {
		t.Fatalf("lookup %+v", l)
	}
	if string(l.Values["subagent"]) != `{"mode":"continuable","label":"a","seq":1}` || string(l.Values["count"]) != "3" {
		t.Fatalf("values %s", l.Values)
	}
	if !reflect.DeepEqual(l.Rows, cp) {
		t.Fatalf("rows %v, put %v", l.Rows, cp)
	}
}

// TestLookupForeign: a difference in any one witness field makes the record
// another lifecycle's.
func TestLookupForeign(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	reg := registry(t)
	c := projcache.NewCache(db, reg)
	stored := childHeader("c1")
	cp, asOf := folded(t, reg, events(descA))
	if err := c.Put(ctx, stored, asOf, cp); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		field  string
		change func(*session.Header)
	}{
		{"version", func(h *session.Header) { h.Version++ }},
		{"createdAt", func(h *session.Header) { h.CreatedAt++ }},
		{"cwd", func(h *session.Header) { h.Cwd = ptr("/elsewhere") }},
		{"cwd", func(h *session.Header) { h.Cwd = nil }},
		{"parentSession", func(h *session.Header) { h.ParentSession = ptr("another-parent") }},
		{"parentSession", func(h *session.Header) { h.ParentSession = nil }},
		{"seedLength", func(h *session.Header) { h.SeedLength = ptr(int64(5)) }},
		{"seedLength", func(h *session.Header) { h.SeedLength = nil }},
		{"seedLength", func(h *session.Header) { h.SeedLength = ptr(int64(0)) }},
		{"origin", func(h *session.Header) { h.Origin = nil }},
		{"delegationDepth", func(h *session.Header) { h.DelegationDepth = ptr(int64(2)) }},
		{"delegationDepth", func(h *session.Header) { h.DelegationDepth = nil }},
		{"agentPreset", func(h *session.Header) { h.AgentPreset = ptr("other") }},
		{"agentPreset", func(h *session.Header) { h.AgentPreset = nil }},
	}
	for i, tc := range cases {
		t.Run(fmt.Sprintf("%d-%s", i, tc.field), func(t *testing.T) {
			h := stored
			tc.change(&h)
			l, err := c.Lookup(ctx, h)
			if err != nil {
				t.Fatal(err)
			}
			if l.Status != projcache.Foreign || l.Values != nil || l.Reason != "witness field "+tc.field+" differs from the header" {
				t.Fatalf("lookup %+v", l)
			}
		})
	}
	// The reverse direction: a record written for an unseeded header with
	// absent optionals does not serve a header that has them.
	bare := session.Header{ID: "c2", CreatedAt: 5}
	if err := c.Put(ctx, bare, asOf, cp); err != nil {
		t.Fatal(err)
	}
	withDepth := bare
	withDepth.DelegationDepth = ptr(int64(0))
	if l, _ := c.Lookup(ctx, withDepth); l.Status != projcache.Foreign {
		t.Fatalf("absent vs 0 delegationDepth: %v", l.Status)
	}
	if l, _ := c.Lookup(ctx, bare); l.Status != projcache.Hit {
		t.Fatalf("same bare header: %v", l.Status)
	}
}

// TestLookupStateVersion: a row at another state version is dropped, the
// rest of the record still serves.
func TestLookupStateVersion(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	h := childHeader("c1")
	old := registry(t, countUnit{ver: 1})
	cp, asOf := folded(t, old, events(descA, "turn/end"))
	if err := projcache.NewCache(db, old).Put(ctx, h, asOf, cp); err != nil {
		t.Fatal(err)
	}
	l, err := projcache.NewCache(db, registry(t, countUnit{ver: 2})).Lookup(ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	if l.Status != projcache.Hit || len(l.Values) != 1 || string(l.Values["subagent"]) != `{"mode":"continuable","label":"a","seq":0}` {
		t.Fatalf("lookup %+v", l)
	}
	if _, ok := l.Rows["count"]; ok || l.Dropped["count"] != "state version 1, registered 2" {
		t.Fatalf("count row: rows %v dropped %v", l.Rows, l.Dropped)
	}
}

// TestLookupPoisoned: bytes that do not decode as rows are a miss, never an
// error or a panic.
func TestLookupPoisoned(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	reg := registry(t)
	c := projcache.NewCache(db, reg)
	h := childHeader("c1")
	cp, asOf := folded(t, reg, events(descA))
	for _, bad := range []string{
		``, `not json`, `null`, `[]`, `{"subagent":`, `{"subagent":{"ver":2,"seq":0}}`,
		`{"subagent":{"ver":-1,"seq":0,"val":{}}}`, `{"subagent":{"ver":2,"seq":-2,"val":{}}}`,
		`{"subagent":{"ver":2.5,"seq":0,"val":{}}}`, `{"subagent":{"ver":"2","seq":0,"val":{}}}`,
		`{"subagent":7}`, `{} {}`, "\xff\xfe",
		// Keys match exactly, as in JavaScript (found by FuzzCheckpointDecode).
		`{"subagent":{"ver":2,"seq":0,"vAl":{}}}`, `{"subagent":{"VER":2,"Seq":0,"val":{}}}`,
	} {
		if err := c.Put(ctx, h, asOf, cp); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Querier().ExecContext(ctx, `UPDATE projection_checkpoints SET rows = ? WHERE session_id = ?`, bad, h.ID); err != nil {
			t.Fatal(err)
		}
		l, err := c.Lookup(ctx, h)
		if err != nil || l.Status != projcache.Poisoned || l.Values != nil || l.Reason == "" {
			t.Errorf("rows %q: %+v, %v", bad, l, err)
		}
	}
}

func TestPutReplacesWholeRecord(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	reg := registry(t, countUnit{ver: 1})
	c := projcache.NewCache(db, reg)
	h := childHeader("c1")
	cp, asOf := folded(t, reg, events(descA, "turn/end"))
	if err := c.Put(ctx, h, asOf, cp); err != nil {
		t.Fatal(err)
	}
	// A second writer knows only the subagent unit: the count row must not
	// survive from the first record.
	only := registry(t)
	cp2, asOf2 := folded(t, only, events(descA, "turn/end", "turn/start"))
	newLife := h
	newLife.CreatedAt++
	if err := projcache.NewCache(db, only).Put(ctx, newLife, asOf2, cp2); err != nil {
		t.Fatal(err)
	}
	var n int
	var rows string
	if err := db.Querier().QueryRowContext(ctx, `SELECT count(*), max(rows) FROM projection_checkpoints`).Scan(&n, &rows); err != nil {
		t.Fatal(err)
	}
	if n != 1 || strings.Contains(rows, "count") {
		t.Fatalf("%d records, rows %s", n, rows)
	}
	if l, _ := c.Lookup(ctx, h); l.Status != projcache.Foreign {
		t.Fatalf("old lifecycle: %v", l.Status)
	}
	l, _ := c.Lookup(ctx, newLife)
	if l.Status != projcache.Hit || l.AsOfSeq != 2 || len(l.Values) != 1 || l.Dropped != nil {
		t.Fatalf("new lifecycle: %+v", l)
	}
}

// TestPutRefusesRowsAheadOfTheLog: the log leads; a row claiming events past
// the watermark, or a state that is not JSON, is never written.
func TestPutRefuses(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	c := projcache.NewCache(db, registry(t))
	h := childHeader("c1")
	for name, cp := range map[string]projcache.Checkpoint{
		"ahead":    {"subagent": {Ver: 2, Seq: 5, Val: json.RawMessage(`{}`)}},
		"not json": {"subagent": {Ver: 2, Seq: 1, Val: json.RawMessage(`{`)}},
		"no key":   {"": {Ver: 2, Seq: 1, Val: json.RawMessage(`{}`)}},
	} {
		if err := c.Put(ctx, h, 3, cp); err == nil {
			t.Errorf("%s: written", name)
		}
	}
	if l, _ := c.Lookup(ctx, h); l.Status != projcache.Miss {
		t.Fatalf("a refused put left a record: %v", l.Status)
	}
}

// putOneShot writes h's checkpoint: a one-shot identity labelled n<i>.
func putOneShot(t *testing.T, c *projcache.Cache, reg *projcache.Registry, h session.Header, i int) {
	t.Helper()
	cp, asOf := folded(t, reg, events("turn/start", fmt.Sprintf(`subagent/descriptor={"version":2,"mode":"one-shot","provider":"spawn","label":"n%d"}`, i)))
	if err := c.Put(context.Background(), h, asOf, cp); err != nil {
		t.Fatal(err)
	}
}

func TestLookupMany(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	reg := registry(t)
	c := projcache.NewCache(db, reg)
	var headers []session.Header
	for i := range 5 {
		h := childHeader(fmt.Sprintf("child-%d", i))
		h.SeedLength = nil
		headers = append(headers, h)
		if i == 4 {
			continue // no record
		}
		putOneShot(t, c, reg, h, i)
	}
	if _, err := db.Querier().ExecContext(ctx, `UPDATE projection_checkpoints SET rows = 'x' WHERE session_id = 'child-2'`); err != nil {
		t.Fatal(err)
	}
	headers[3].CreatedAt++ // another lifecycle than the record's
	got, err := c.LookupMany(ctx, headers)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]projcache.Status{"child-0": projcache.Hit, "child-1": projcache.Hit, "child-2": projcache.Poisoned, "child-3": projcache.Foreign, "child-4": projcache.Miss}
	if len(got) != len(want) {
		t.Fatalf("got %d lookups", len(got))
	}
	for id, st := range want {
		if got[id].Status != st {
			t.Errorf("%s: %v, want %v", id, got[id].Status, st)
		}
	}
	if string(got["child-1"].Values["subagent"]) != `{"mode":"one-shot","label":"n1","seq":1}` {
		t.Fatalf("child-1: %s", got["child-1"].Values)
	}
	for id := range want {
		one, _ := c.Lookup(ctx, headers[id[len(id)-1]-'0'])
		if !reflect.DeepEqual(one, got[id]) {
			t.Errorf("%s: LookupMany %+v, Lookup %+v", id, got[id], one)
		}
	}
	if empty, err := c.LookupMany(ctx, nil); err != nil || len(empty) != 0 {
		t.Fatalf("no headers: %v %v", empty, err)
	}
}

func TestDeleteClearIDs(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	reg := registry(t)
	c := projcache.NewCache(db, reg)
	cp, asOf := folded(t, reg, events(descA))
	for _, id := range []string{"b", "a", "c"} {
		if err := c.Put(ctx, childHeader(id), asOf, cp); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Delete(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if ids, err := c.IDs(ctx); err != nil || !reflect.DeepEqual(ids, []string{"a", "c"}) {
		t.Fatalf("ids %v %v", ids, err)
	}
	if n, err := c.Clear(ctx); err != nil || n != 2 {
		t.Fatalf("clear %d %v", n, err)
	}
	if ids, _ := c.IDs(ctx); len(ids) != 0 {
		t.Fatalf("after clear %v", ids)
	}
}

// maintenance is a store holding sessions and a cache with good records,
// damaged by hand: c-bad holds a wrong identity, c-stale an old count
// version, c-poison garbage, c-foreign a record of another lifecycle;
// c-orphan has a record but no session; c-lag's record is behind its log
// (which is fine).
type maintenance struct {
	store   *sqlitepersist.Store
	path    string
	headers map[string]session.Header
}

var maintenanceIDs = []string{"c-ok", "c-bad", "c-stale", "c-poison", "c-foreign", "c-orphan", "c-lag"}

func maintenanceCorpus(t *testing.T) maintenance {
	t.Helper()
	ctx := context.Background()
	db := openDB(t)
	st := db
	reg := registry(t, countUnit{ver: 1})
	c := projcache.NewCache(db, reg)
	m := maintenance{store: st, path: st.Path(), headers: map[string]session.Header{}}
	for _, id := range maintenanceIDs {
		h := childHeader(id)
		log := events("turn/start="+`{"turn":1}`, descA, "turn/end="+`{"turn":1,"reason":{"kind":"completed"}}`)
		if id != "c-orphan" {
			if err := st.CreateSession(ctx, h, log); err != nil {
				t.Fatal(err)
			}
			m.headers[id] = h
		}
		if id == "c-lag" {
			log = log[:2]
		}
		if id == "c-foreign" {
			h.CreatedAt++
		}
		cp, asOf := folded(t, reg, log)
		if err := c.Put(ctx, h, asOf, cp); err != nil {
			t.Fatal(err)
		}
	}
	for id, rows := range map[string]string{
		"c-bad":    `{"count":{"ver":1,"seq":2,"val":3},"subagent":{"ver":2,"seq":2,"val":{"identity":{"mode":"one-shot","label":"forged","seq":1}}}}`,
		"c-stale":  `{"count":{"ver":0,"seq":2,"val":3},"subagent":{"ver":2,"seq":2,"val":{"identity":{"mode":"continuable","label":"a","seq":1}}}}`,
		"c-poison": `{"subagent":{"ver":2,`,
	} {
		if _, err := db.Querier().ExecContext(ctx, `UPDATE projection_checkpoints SET rows = ? WHERE session_id = ?`, rows, id); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

// cache opens the cache of a store with the maintenance units registered.
func (m maintenance) cache(t *testing.T, st *sqlitepersist.Store) *projcache.Cache {
	return projcache.NewCache(st, registry(t, countUnit{ver: 1}))
}

// storeReader is the adapter a caller writes: the store's full read, with
// its not-found error translated for the cache.
func storeReader(st *sqlitepersist.Store) projcache.ReadFunc {
	return func(ctx context.Context, id string) (session.Header, []session.Event, error) {
		ins, err := st.Inspect(ctx, id)
		if errors.Is(err, backend.ErrNotFound) {
			return session.Header{}, nil, fmt.Errorf("%w: %w", projcache.ErrSessionGone, err)
		}
		if err != nil {
			return session.Header{}, nil, err
		}
		return ins.Header, ins.Events, nil
	}
}

func storeHeaders(st *sqlitepersist.Store) projcache.HeaderFunc {
	return func(ctx context.Context, id string) (session.Header, error) {
		h, err := st.Header(ctx, id)
		if errors.Is(err, backend.ErrNotFound) {
			return session.Header{}, fmt.Errorf("%w: %w", projcache.ErrSessionGone, err)
		}
		return h, err
	}
}

// fileHashes hashes the database file and its write-ahead log.
func fileHashes(t *testing.T, path string) [2][32]byte {
	t.Helper()
	var out [2][32]byte
	for i, p := range []string{path, path + "-wal"} {
		b, err := os.ReadFile(p)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		out[i] = sha256.Sum256(b)
	}
	return out
}

// TestVerify finds every hand-made problem, through a read-only store, and
// leaves the file unchanged (as do Stats and lookups).
func TestVerify(t *testing.T) {
	ctx := context.Background()
	m := maintenanceCorpus(t)
	m.store.Close()
	before := fileHashes(t, m.path)
	ro, err := sqlitepersist.OpenReadOnly(ctx, m.path, sqlitepersist.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	c := m.cache(t, ro)
	rep, err := c.Verify(ctx, storeReader(ro), nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Checked != 7 || len(rep.NoRecord) != 0 {
		t.Fatalf("checked %d, no record %v", rep.Checked, rep.NoRecord)
	}
	var got []string
	for _, f := range rep.Findings {
		got = append(got, f.String())
	}
	want := []string{
		"c-bad: subagent mismatch: state at seq 2 differs from a refold of the log",
		"c-foreign: foreign: witness field createdAt differs from the stored header",
		"c-orphan: orphan: session is not in the store",
		"c-poison: poisoned: rows do not decode: unexpected end of JSON input",
		"c-stale: count stale: state version 0, registered 1",
	}
	if len(got) != len(want) {
		t.Fatalf("findings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for i := range want {
		// The orphan's reason goes on with the store's own not-found text.
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("finding %d: %s, want %s", i, got[i], want[i])
		}
	}
	one, err := c.Verify(ctx, storeReader(ro), []string{"c-ok", "c-missing"})
	if err != nil || one.Checked != 1 || len(one.Findings) != 0 || !reflect.DeepEqual(one.NoRecord, []string{"c-missing"}) {
		t.Fatalf("selected ids: %+v %v", one, err)
	}
	if _, err := c.Stats(ctx, storeHeaders(ro)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.LookupMany(ctx, []session.Header{m.headers["c-ok"]}); err != nil {
		t.Fatal(err)
	}
	ro.Close()
	if fileHashes(t, m.path) != before {
		t.Fatal("a read-only operation changed the database")
	}
}

// TestVerifyAhead: a record claiming events the log does not have is
// reported.
func TestVerifyAhead(t *testing.T) {
	ctx := context.Background()
	m := maintenanceCorpus(t)
	c := m.cache(t, m.store)
	ahead := projcache.Checkpoint{"subagent": {Ver: 2, Seq: 9, Val: json.RawMessage(`{}`)}}
	if err := c.Put(ctx, m.headers["c-ok"], 9, ahead); err != nil {
		t.Fatal(err)
	}
	rep, err := c.Verify(ctx, storeReader(m.store), []string{"c-ok"})
	if err != nil || len(rep.Findings) != 1 || rep.Findings[0].String() != "c-ok: ahead: watermark 9 is beyond the log's last seq 2" {
		t.Fatalf("%+v %v", rep, err)
	}
}

func TestStats(t *testing.T) {
	ctx := context.Background()
	m := maintenanceCorpus(t)
	c := m.cache(t, m.store)
	st, err := c.Stats(ctx, storeHeaders(m.store))
	if err != nil {
		t.Fatal(err)
	}
	want := projcache.Stats{
		Records:  7,
		Units:    map[string]map[int]int{"subagent": {2: 6}, "count": {1: 5, 0: 1}},
		Stale:    1,
		Poisoned: 1,
		Foreign:  1,
		Orphaned: 1,
	}
	if !reflect.DeepEqual(st, want) {
		t.Fatalf("stats %+v, want %+v", st, want)
	}
	st, _ = c.Stats(ctx, nil)
	if st.Foreign != 0 || st.Orphaned != 0 || st.Records != 7 {
		t.Fatalf("without headers %+v", st)
	}
}

func TestRebuild(t *testing.T) {
	ctx := context.Background()
	m := maintenanceCorpus(t)
	c := m.cache(t, m.store)
	var calls []int
	rep, err := c.Rebuild(ctx, storeReader(m.store), nil, func(done, total int) {
		if total != 7 {
			t.Errorf("total %d", total)
		}
		calls = append(calls, done)
	})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Rewritten != 6 || len(rep.Removed) != 1 || rep.Removed[0].SessionID != "c-orphan" || rep.Removed[0].Kind != projcache.KindOrphan || len(rep.UnitFailures) != 0 {
		t.Fatalf("report %+v", rep)
	}
	if !reflect.DeepEqual(calls, []int{1, 2, 3, 4, 5, 6, 7}) {
		t.Fatalf("progress %v", calls)
	}
	after, err := c.Verify(ctx, storeReader(m.store), nil)
	if err != nil || after.Checked != 6 || len(after.Findings) != 0 {
		t.Fatalf("verify after rebuild: %+v %v", after, err)
	}
	for id, h := range m.headers {
		l, err := c.Lookup(ctx, h)
		if err != nil || l.Status != projcache.Hit || l.AsOfSeq != 2 || string(l.Values["subagent"]) != `{"mode":"continuable","label":"a","seq":1}` || string(l.Values["count"]) != "3" {
			t.Errorf("%s after rebuild: %+v %v", id, l, err)
		}
	}
}

// TestRebuildUnitFailure: a unit that fails on a log leaves its row out;
// the record keeps every other unit's row, so a reader refolds that unit.
func TestRebuildUnitFailure(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	c := projcache.NewCache(db, registry(t, trapUnit{}))
	h := childHeader("c1")
	store := memStore{"c1": {h, events(descA, "x/fail")}}
	rep, err := c.Rebuild(ctx, store.read, []string{"c1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Rewritten != 1 || len(rep.UnitFailures) != 1 || rep.UnitFailures[0].String() != "c1: trap unit-failed: cannot fold x/fail" {
		t.Fatalf("report %+v", rep)
	}
	l, _ := c.Lookup(ctx, h)
	if l.Status != projcache.Hit || len(l.Values) != 1 || l.Values["subagent"] == nil {
		t.Fatalf("lookup %+v", l)
	}
}

func TestRebuildUnreadableLogRemovesRecord(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	reg := registry(t)
	c := projcache.NewCache(db, reg)
	h := childHeader("c1")
	cp, asOf := folded(t, reg, events(descA))
	if err := c.Put(ctx, h, asOf, cp); err != nil {
		t.Fatal(err)
	}
	broken := func(context.Context, string) (session.Header, []session.Event, error) {
		return session.Header{}, nil, fmt.Errorf("seq 3 is not contiguous; expected 2")
	}
	rep, err := c.Rebuild(ctx, broken, []string{"c1"}, nil)
	if err != nil || len(rep.Removed) != 1 || rep.Removed[0].Kind != projcache.KindUnreadable || !strings.Contains(rep.Removed[0].Reason, "not contiguous") {
		t.Fatalf("%+v %v", rep, err)
	}
	if l, _ := c.Lookup(ctx, h); l.Status != projcache.Miss {
		t.Fatalf("record kept: %v", l.Status)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := c.Rebuild(cancelled, broken, []string{"c1"}, nil); err == nil {
		t.Fatal("a cancelled rebuild must stop with an error")
	}
}

// With many children of one parent LookupMany reads that parent's range of
// records: hits, misses, poisoned and per-key results are what Lookup says;
// a record written for another parent is not served (Lookup calls it
// foreign, LookupMany leaves it a miss — for a reader both mean "fold").
func TestLookupManyByParentRange(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	reg := registry(t)
	c := projcache.NewCache(db, reg)
	var headers []session.Header
	for i := range 40 {
		h := childHeader(fmt.Sprintf("child-%02d", i))
		h.SeedLength = nil
		headers = append(headers, h)
		if i == 39 {
			continue // no record
		}
		written := h
		if i == 38 {
			written.ParentSession = ptr("another-parent")
		}
		putOneShot(t, c, reg, written, i)
	}
	if _, err := db.Querier().ExecContext(ctx, `UPDATE projection_checkpoints SET rows = 'x' WHERE session_id = 'child-02'`); err != nil {
		t.Fatal(err)
	}
	got, err := c.LookupMany(ctx, headers)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(headers) {
		t.Fatalf("got %d lookups, want %d", len(got), len(headers))
	}
	for _, h := range headers {
		one, err := c.Lookup(ctx, h)
		if err != nil {
			t.Fatal(err)
		}
		if one.Status == projcache.Foreign {
			if got[h.ID].Status != projcache.Miss {
				t.Errorf("%s: LookupMany %v, want a miss for another parent's record", h.ID, got[h.ID].Status)
			}
			continue
		}
		if !reflect.DeepEqual(one, got[h.ID]) {
			t.Errorf("%s: LookupMany %+v, Lookup %+v", h.ID, got[h.ID], one)
		}
	}
	if got["child-02"].Status != projcache.Poisoned || got["child-39"].Status != projcache.Miss || got["child-07"].Status != projcache.Hit {
		t.Fatalf("statuses: %v %v %v", got["child-02"].Status, got["child-39"].Status, got["child-07"].Status)
	}
}

// A checkpoint row's state is stored as JSON.stringify writes it: a lone
// surrogate escape in the state stays one (issue #11, defect 11).
func TestCheckpointKeepsLoneSurrogates(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	h := childHeader("c")
	reg := registry(t, countUnit{ver: 1})
	cp := projcache.Checkpoint{"count": {Ver: 1, Seq: 0, Val: json.RawMessage("{ \"s\" : \"\\ud800\" }")}}
	if err := projcache.NewCache(db, reg).Put(ctx, h, 0, cp); err != nil {
		t.Fatal(err)
	}
	rec, found, err := db.Checkpoint(ctx, "c")
	if err != nil || !found || !strings.Contains(string(rec.Rows), `"val":{"s":"\ud800"}`) {
		t.Fatalf("stored rows %s (found %v, %v); want the lone surrogate kept", rec.Rows, found, err)
	}
}
