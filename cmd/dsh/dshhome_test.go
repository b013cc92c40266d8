package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/dsh-project/dsh/internal/dshfixtures"
)

// dshHome is a DSH 0.2-style home built from DSH's later snapshots
// (converted to raw logs as later-formats §3 says): sessions of formats 0,
// 2, 4 and 5 side by side under one project key, the V4 logs as
// multi-frame zstd, one with a torn last frame and a session.lock held by
// another process, and a per-record (v7) projection cache with a fresh, a
// stale, a foreign and an unreadable record.
type dshHome struct {
	dir, parent string
	lock        string
}

const homeProject = "--home-dev-later--"

func laterFixture(t *testing.T, rel string) dshfixtures.LaterFixture {
	t.Helper()
	for _, f := range dshfixtures.LaterFixtures {
		if f.Rel == rel {
			return f
		}
	}
	t.Fatalf("no later fixture %s", rel)
	return dshfixtures.LaterFixture{}
}

// frames compresses the log as DSH flushes it: a header-only frame, then
// one frame per batch of up to three event lines.
func frames(t *testing.T, log []byte) (out []byte, last int) {
	t.Helper()
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderCRC(true))
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	lines := bytes.SplitAfter(log, []byte("\n"))
	out = enc.EncodeAll(lines[0], nil)
	for i := 1; i < len(lines) && len(lines[i]) > 0; i += 3 {
		last = len(out)
		out = enc.EncodeAll(bytes.Join(lines[i:min(i+3, len(lines))], nil), out)
	}
	return out, last
}

func buildDSHHome(t *testing.T) *dshHome {
	t.Helper()
	h := &dshHome{dir: t.TempDir(), parent: "session-00000000-0000-4000-8000-0000000000aa"}
	put := func(rel string, content []byte) string {
		p := filepath.Join(h.dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, content, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	raw := func(child, rel string) []byte {
		return dshfixtures.LaterRawLog(t, laterFixture(t, rel), dshfixtures.LaterTokens{
			Sessions: map[int]string{1: h.parent, 2: child}, Cwd: "/home/dev/later"})
	}
	session := func(id, name string) string { return filepath.Join("sessions", homeProject, id, name) }

	parentLog, _ := frames(t, raw("c-v4-fork", "v4/snapshots/sdk/subagent-fork-in-process/session.v4.jsonl"))
	put(session(h.parent, "session.v4.jsonl.zstd"), parentLog)
	// The fork child is being written: its last frame (events 30, the
	// turn/end) is only half on disk, and its writer holds the lock.
	forkLog, last := frames(t, raw("c-v4-fork", "v4/snapshots/sdk/subagent-fork-in-process/session.1.v4.jsonl"))
	put(session("c-v4-fork", "session.v4.jsonl.zstd"), forkLog[:last+(len(forkLog)-last)/2])
	h.lock = put(session("c-v4-fork", "session.lock"), nil)
	spawn4, _ := frames(t, raw("c-v4-spawn", "v4/snapshots/sdk/subagent-continuable/session.1.v4.jsonl"))
	put(session("c-v4-spawn", "session.v4.jsonl.zstd"), spawn4)
	put(session("c-v2-spawn", "session.v2.jsonl"), raw("c-v2-spawn", "v2/snapshots/sdk/subagent-continuable/session.1.v2.jsonl"))
	// A format-0 (rc.8) child with a version-2 descriptor and an untagged
	// end-seed, as rc.8 wrote spawned children.
	put(session("c-v0", "session.jsonl"), []byte(`{"type":"session","version":0,"id":"c-v0","createdAt":1789000003000,"cwd":"/home/dev/later","parentSession":"`+h.parent+`","origin":"subagent","delegationDepth":1}
{"type":"subagent/descriptor","seq":0,"time":1789000003001,"data":{"version":2,"mode":"continuable","provider":"spawn","label":"rc.8 child"}}
{"type":"session/end-seed","seq":1,"time":1789000003002,"data":{}}
{"type":"turn/start","seq":2,"time":1789000003003,"data":{"turn":1}}
{"type":"turn/end","seq":3,"time":1789000003004,"data":{"turn":1,"reason":{"kind":"completed"}}}
`))
	// A future format beside an older generation dsh would read: refused,
	// never fallen back from.
	v4 := raw("c-v5", "v4/snapshots/sdk/subagent-continuable/session.1.v4.jsonl")
	v4 = bytes.Replace(v4, []byte(`"createdAt":1789000001000`), []byte(`"createdAt":1789000004000`), 1)
	put(session("c-v5", "session.v4.jsonl"), v4)
	put(session("c-v5", "session.v5.jsonl"), bytes.Replace(v4, []byte(`"version":4`), []byte(`"version":5`), 1))

	record := func(id, identity, label string) {
		put(filepath.Join("storages", "session_projcache", "sessions", id+".json"), fmt.Appendf(nil, `{
  "version": 7,
  "record": {
    "identity": %s,
    "rows": {
      "title": { "ver": 1, "seq": 3, "val": "t" },
      "subagent": { "ver": 2, "seq": 0, "val": { "identity": { "mode": "continuable", "label": %q, "seq": 0 } } }
    }
  }
}
`, identity, label))
	}
	// Fresh: the witness of the selected generation (format 2, unseeded).
	record("c-v2-spawn", `{"formatVersion":2,"createdAt":1789000001000,"cwd":"/home/dev/later","isSeeded":false,"inheritedEventCount":0}`, "label from the v7 cache")
	// Stale: folded from another generation of the log.
	record("c-v0", `{"formatVersion":4,"createdAt":1789000003000,"cwd":"/home/dev/later","isSeeded":false,"inheritedEventCount":0}`, "stale")
	// Foreign: another lifecycle of the id.
	record("c-v4-spawn", `{"formatVersion":4,"createdAt":1,"cwd":"/home/dev/later","isSeeded":false,"inheritedEventCount":0}`, "foreign")
	put(filepath.Join("storages", "session_projcache", "sessions", "c-v4-fork.json"), []byte(`{"version":8,"record":{}}`))
	put(filepath.Join("storages", "session_projcache", "sessions", "c-v2-spawn.json.bak.202612011200"), []byte(`garbage`))
	put(filepath.Join("storages", "workspace.json"), []byte(`{}`))
	put(".credentials.yaml", []byte("never: read\n"))
	return h
}

// holdLock takes session.lock the way a live DSH writer does (flock(2)) in
// another process, until the test ends.
func holdLock(t *testing.T, path string) {
	t.Helper()
	if _, err := exec.LookPath("flock"); err != nil {
		t.Skip("no flock(1) to hold a lock from another process")
	}
	stop, release := io.Pipe()
	cmd := exec.Command("flock", "-n", path, "-c", "read line")
	cmd.Stdin = stop
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		release.Close()
		cmd.Wait()
	})
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == syscall.EWOULDBLOCK {
			return
		}
		if err == nil {
			syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		}
		if time.Now().After(deadline) {
			t.Fatal("the other process never took the lock")
		}
	}
}

// A DSH home lists, diagnoses and imports as later-formats §13 says, read
// in place through --source dsh-home:PATH and `dsh import dsh-home:PATH`,
// and is byte for byte the same afterwards, its lock still held.
func TestDSHHomeSource(t *testing.T) {
	isolateEnv(t)
	h := buildDSHHome(t)
	holdLock(t, h.lock)
	before := treeFingerprint(t, h.dir)

	stdout, stderr, code := runDsh(t, "list", "--source", "dsh-home:"+h.dir, "--parent", h.parent, "-o", "json")
	if code != 0 {
		t.Fatalf("list: exit %d: %s", code, stderr)
	}
	// Catalog order (createdAt, then id). The fork child lists from its
	// durable prefix (the torn frame held only its turn/end); the fresh v7
	// record serves c-v2-spawn (rung 2); the stale and foreign ones are
	// misses, so those rows come from the logs; format 5 is refused.
	want := `[{"kind":"child","id":"c-v4-fork","mode":"continuable","label":"Recall project codeword","activity":"inactive","hasChildren":false},` +
		`{"kind":"child","id":"c-v2-spawn","mode":"continuable","label":"label from the v7 cache","activity":"inactive","hasChildren":false},` +
		`{"kind":"child","id":"c-v4-spawn","mode":"continuable","label":"Reply with CHILD_OK","activity":"inactive","hasChildren":false},` +
		`{"kind":"child","id":"c-v0","mode":"continuable","label":"rc.8 child","activity":"inactive","hasChildren":false},` +
		`{"kind":"diagnostic","id":"c-v5","reason":"unavailable"}]`
	if got := strings.TrimSpace(stdout); got != want {
		t.Errorf("list\n%s\nwant\n%s", got, want)
	}
	if !strings.Contains(stderr, "1 record file(s) not used") || !strings.Contains(stderr, "domain version 8") {
		t.Errorf("list stderr does not report the unreadable cache record: %s", stderr)
	}

	stdout, stderr, code = runDsh(t, "diagnose", "--source", "dsh-home:"+h.dir, "--parent", h.parent)
	if code != 1 {
		t.Fatalf("diagnose: exit %d, want 1 (an error finding): %s", code, stderr)
	}
	for _, line := range []string{
		"error UNSUPPORTED_FORMAT c-v5: ",
		"warning LOG_TORN_TAIL c-v4-fork seq 30: ",
		"info TURN_INTERRUPTED c-v4-fork seq 22: ",
	} {
		if !strings.Contains(stdout, "\n"+line) && !strings.HasPrefix(stdout, line) {
			t.Errorf("diagnose has no %q:\n%s", line, stdout)
		}
	}
	if !strings.Contains(stdout, "session.v5.jsonl") || !strings.Contains(stdout, "version 5") {
		t.Errorf("UNSUPPORTED_FORMAT names no version or file:\n%s", stdout)
	}

	stdout, stderr, code = runDsh(t, "session", "show", "--source", "dsh-home:"+h.dir, "c-v4-fork", "-o", "json")
	if code != 0 || !strings.Contains(stdout, `"sourceFormat":"jsonl-v4-zstd"`) || !strings.Contains(stdout, `"version":4`) {
		t.Errorf("session show in place: exit %d\n%s%s", code, stdout, stderr)
	}

	db := filepath.Join(t.TempDir(), "dsh.db")
	stdout, stderr, code = runDsh(t, "--db", db, "import", "dsh-home:"+h.dir, "-o", "json")
	if code != 1 {
		t.Fatalf("import: exit %d, want 1 (c-v5 unreadable): %s", code, stderr)
	}
	var sum struct {
		Summary struct{ Imported, Unreadable int } `json:"summary"`
	}
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil || sum.Summary.Imported != 5 || sum.Summary.Unreadable != 1 {
		t.Fatalf("import summary %+v (%v): %s", sum, err, stdout)
	}
	stdout, stderr, code = runDsh(t, "--db", db, "list", "--parent", h.parent, "-o", "json")
	if code != 0 {
		t.Fatalf("list after import: exit %d: %s", code, stderr)
	}
	// Imported, each child lists from its own log (dsh computes its own
	// checkpoints); the refused later-format session keeps its header in
	// the database and lists unavailable, as in place (issue 23).
	want = strings.Replace(want, "label from the v7 cache", "Reply with CHILD_OK", 1)
	if got := strings.TrimSpace(stdout); got != want {
		t.Errorf("list after import\n%s\nwant\n%s", got, want)
	}

	stdout, stderr, code = runDsh(t, "--db", db, "session", "show", "c-v2-spawn", "-o", "json")
	if code != 0 || !strings.Contains(stdout, `"sourceFormat":"jsonl-v2"`) {
		t.Errorf("session show after import: exit %d\n%s%s", code, stdout, stderr)
	}

	if after := treeFingerprint(t, h.dir); after != before {
		t.Errorf("the DSH home changed:\nbefore\n%s\nafter\n%s", before, after)
	}
}
