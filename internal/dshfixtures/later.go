package dshfixtures

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
)

// LaterFixture is one of DSH's recorded-session snapshots of a later
// session format under dsh-snapshots-later/ (later-formats §11).
type LaterFixture struct {
	// Rel is the path under dsh-snapshots-later/.
	Rel string
	// Version is the format version the file holds.
	Version int64
}

// LaterFixtures are every file under dsh-snapshots-later/.
var LaterFixtures = []LaterFixture{
	{"v2/snapshots/sdk/subagent-continuable/session.1.v2.jsonl", 2},
	{"v2/snapshots/sdk/subagent-fork-in-process/session.1.v2.jsonl", 2},
	{"v3/snapshots/sdk/subagent-fork-in-process/session.1.v3.jsonl", 3},
	{"v4/snapshots/sdk/subagent-fork-in-process/session.v4.jsonl", 4},
	{"v4/snapshots/sdk/subagent-fork-in-process/session.1.v4.jsonl", 4},
	{"v4/snapshots/sdk/subagent-continuable/session.1.v4.jsonl", 4},
}

// LaterTokens are the values substituted for a snapshot's placeholders.
type LaterTokens struct {
	// Sessions maps N of {{session:N}} to a session id.
	Sessions map[int]string
	// Cwd replaces {{cwd}}; it must be absolute.
	Cwd string
}

var (
	sessionToken = regexp.MustCompile(`\{\{session:([0-9]+)\}\}`)
	typeMember   = regexp.MustCompile(`^\{"type":"(?:[^"\\]|\\.)*",`)
)

// LaterRawLog turns a later-format snapshot into the raw log DSH would have
// written (later-formats §3): the snapshot's lines lack seq and time, so
// each event line gets "seq" (its 0-based index after the header) and
// "time" (the header's createdAt plus the index, deterministic) right after
// its type, as real V4 lines order them; {{session:N}} and {{cwd}} become
// ids and the cwd. Everything else is kept byte for byte.
func LaterRawLog(t testing.TB, f LaterFixture, tok LaterTokens) []byte {
	t.Helper()
	text, err := os.ReadFile(filepath.Join(Dir(t, "dsh-snapshots-later"), f.Rel))
	if err != nil {
		t.Fatal(err)
	}
	text = sessionToken.ReplaceAllFunc(text, func(m []byte) []byte {
		n, _ := strconv.Atoi(string(sessionToken.FindSubmatch(m)[1]))
		id, ok := tok.Sessions[n]
		if !ok {
			t.Fatalf("%s: no id for %s", f.Rel, m)
		}
		return []byte(id)
	})
	text = bytes.ReplaceAll(text, []byte("{{cwd}}"), []byte(tok.Cwd))
	lines := bytes.Split(bytes.TrimSuffix(text, []byte("\n")), []byte("\n"))
	created := headerCreatedAt(t, f.Rel, lines[0])
	var out bytes.Buffer
	out.Write(lines[0])
	out.WriteByte('\n')
	for i, line := range lines[1:] {
		loc := typeMember.FindIndex(line)
		if loc == nil {
			t.Fatalf("%s line %d does not start with a type member", f.Rel, i+2)
		}
		out.Write(line[:loc[1]])
		out.WriteString(`"seq":` + strconv.Itoa(i) + `,"time":` + strconv.FormatInt(created+int64(i), 10) + `,`)
		out.Write(line[loc[1]:])
		out.WriteByte('\n')
	}
	return out.Bytes()
}

var createdAtMember = regexp.MustCompile(`"createdAt":([0-9]+)`)

func headerCreatedAt(t testing.TB, rel string, header []byte) int64 {
	t.Helper()
	m := createdAtMember.FindSubmatch(header)
	if m == nil {
		t.Fatalf("%s: header has no createdAt", rel)
	}
	n, err := strconv.ParseInt(string(m[1]), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
