package dshformat

import (
	"context"
	"errors"
	"testing"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/session"
)

// A foreign corpus read in place offers the backend contract's read side:
// the listing's questions from its headers, logs as DSH's inspect reads
// them, every damaged session reported rather than dropped.
func TestCorpusReadSide(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	header := func(id, parent string, createdAt int) string {
		h := `{"type":"session","version":0,"id":"` + id + `","createdAt":` + itoa(createdAt) + `,"cwd":"/w"`
		if parent != "" {
			h += `,"parentSession":"` + parent + `","origin":"subagent","delegationDepth":1`
		}
		return h + "}\n"
	}
	writeFile(t, dir, "p.jsonl", []byte(header("p", "", 1)))
	writeFile(t, dir, "b.jsonl", []byte(header("b", "p", 5)+turnStart(0)+"\n"+turnEnd(1)+"\n"))
	writeFile(t, dir, "a.jsonl", []byte(header("a", "p", 5)+turnStart(0)+"\n{broken\n"+turnEnd(2)+"\n"))
	writeFile(t, dir, "junk.jsonl", []byte("not a header\n"))
	src := openJSONL(t, dir)
	c, err := NewCorpus(ctx, src, "jsonl:test")
	if err != nil {
		t.Fatal(err)
	}
	var kids []string
	if err := c.ChildrenOf(ctx, "p", func(h session.Header) error { kids = append(kids, h.ID); return nil }); err != nil || len(kids) != 2 || kids[0] != "a" {
		t.Fatalf("ChildrenOf(p) = %q, %v; want a, b in (createdAt, id) order", kids, err)
	}
	if has, err := c.SubagentParents(ctx, []string{"p", "a"}); err != nil || !has["p"] || has["a"] {
		t.Errorf("SubagentParents = %v, %v; want only p", has, err)
	}
	if n, err := c.CountSessions(ctx, true); err != nil || n != 2 {
		t.Errorf("CountSessions(subagent) = %d, %v; want 2", n, err)
	}
	in, err := c.Inspect(ctx, "b")
	if err != nil || len(in.Events) != 2 || in.Torn != nil {
		t.Fatalf("Inspect(b) = %+v, %v", in, err)
	}
	// A committed line that does not parse: the session is still offered,
	// its log unreadable, with the verdict kept beside the header.
	a, err := c.Audit(ctx, "a")
	if err != nil || a.Header.ID != "a" || a.Events != nil || !errors.Is(a.ReadErr, backend.ErrCorrupt) || dsherr.CodeOf(a.ReadErr) != dsherr.InvalidLog {
		t.Fatalf("Audit(a) = %+v, %v; want the header and an INVALID_LOG read error matching ErrCorrupt", a, err)
	}
	if _, err := c.Inspect(ctx, "a"); !errors.Is(err, backend.ErrCorrupt) {
		t.Errorf("Inspect(a) = %v, want ErrCorrupt", err)
	}
	if _, err := c.Header(ctx, "nope"); !errors.Is(err, backend.ErrNotFound) || dsherr.CodeOf(err) != dsherr.NotFound {
		t.Errorf("Header(nope) = %v, want NOT_FOUND", err)
	}
	u := c.Unoffered()
	if len(u) != 1 || u[0].ID != "" || u[0].Err == nil {
		t.Fatalf("Unoffered = %+v, want the file without a header", u)
	}
	if live, err := c.LiveSessions(ctx); err != nil || len(live) != 0 {
		t.Errorf("LiveSessions = %v, %v; nothing is live in a foreign corpus", live, err)
	}
}
