package dshformat

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"strconv"
	"testing"

	"github.com/dsh-project/dsh/internal/session"
)

// rchar is the bytes this process has read from files so far (Linux's
// /proc/self/io); the test skips where there is none.
func rchar(t *testing.T) int64 {
	t.Helper()
	data, err := os.ReadFile("/proc/self/io")
	if err != nil {
		t.Skipf("no /proc/self/io to count the bytes read: %v", err)
	}
	for _, line := range bytes.Split(data, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte("rchar: ")); ok {
			n, err := strconv.ParseInt(string(v), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Skip("/proc/self/io has no rchar")
	return 0
}

// Opening a corpus in place and answering a listing's questions from it
// reads no more of each session file than DSH's listing does: enough of
// the file to obtain its header (DSH reads frame 1 in 8 KiB chunks), not
// its log. Counted in bytes read by this process, over children whose
// logs are far larger than that.
func TestCorpusReadsOnlyHeaders(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	const children = 20
	depth := int64(1)
	origin := session.OriginSubagent
	parent := "p"
	// Incompressible event text: each log is over 64 KiB as stored.
	seed := sha256.Sum256([]byte("seed"))
	var events []session.Event
	for i := range 64 {
		var text []byte
		for range 32 {
			seed = sha256.Sum256(seed[:])
			text = hex.AppendEncode(text, seed[:])
		}
		events = append(events, event(int64(i), "note", `{"text":"`+string(text)+`"}`))
	}
	var stored int64
	write := func(h session.Header, events []session.Event) {
		path, err := WriteJSONL(ctx, dir, h, events, WriteOptions{Compression: CompressionZstd})
		if err != nil {
			t.Fatal(err)
		}
		info, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		stored += info.Size()
	}
	write(session.Header{ID: parent, CreatedAt: 1, DelegationDepth: new(int64)}, nil)
	for i := range children {
		write(session.Header{ID: "c" + strconv.Itoa(i), CreatedAt: int64(10 + i), ParentSession: &parent, Origin: &origin, DelegationDepth: &depth}, events)
	}
	if stored < children*64<<10 {
		t.Fatalf("the logs hold %d bytes, want over 64 KiB each", stored)
	}

	before := rchar(t)
	src := openJSONL(t, dir)
	c, err := NewCorpus(ctx, src, "jsonl:test")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	if err := c.ChildrenOf(ctx, parent, func(h session.Header) error {
		n++
		if _, err := c.HasSubagentChild(ctx, h.ID); err != nil {
			return err
		}
		_, err := c.Header(ctx, h.ID)
		return err
	}); err != nil || n != children {
		t.Fatalf("ChildrenOf = %d children, %v; want %d", n, err, children)
	}
	read := rchar(t) - before
	t.Logf("read %d bytes of %d session files holding %d", read, children+1, stored)
	if limit := int64(children+1) * 8 << 10; read > limit {
		t.Errorf("opening and enumerating %d session files read %d bytes (their logs hold %d); want at most 8 KiB a file (%d)", children+1, read, stored, limit)
	}
}
