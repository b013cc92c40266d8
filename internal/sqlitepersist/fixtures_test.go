package sqlitepersist

import (
	"github.com/dsh-project/dsh/internal/dshfixtures"

	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-project/dsh/internal/session"
)

// TestDSHLogsRoundTripByteExact stores every DSH-written log (those without
// packed chunk rows, which are a JSONL storage detail) through CreateSession
// and checks Inspect hands back events that encode to DSH's exact lines.
func TestDSHLogsRoundTripByteExact(t *testing.T) {
	snapshotDir := dshfixtures.Dir(t, "dsh-snapshots")
	ctx := context.Background()
	paths, err := filepath.Glob(filepath.Join(snapshotDir, "*", "*", "session*.jsonl"))
	if err != nil || len(paths) == 0 {
		t.Skipf("no session logs under %s (%v)", snapshotDir, err)
	}
	stores := map[string]*Store{} // one per scenario: ids repeat across scenarios
	stored, skipped := 0, 0
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		lines := bytes.Split(bytes.TrimSuffix(raw, []byte("\n")), []byte("\n"))
		headerLine := bytes.ReplaceAll(lines[0], []byte(`"cwd":"{{cwd}}"`), []byte(`"cwd":"/home/user/project"`))
		h, err := session.ParseHeaderJSON(headerLine)
		if err != nil || hasPackedRows(lines[1:]) {
			skipped++
			continue
		}
		events := make([]session.Event, len(lines)-1)
		for i, l := range lines[1:] {
			if err := events[i].UnmarshalJSON(l); err != nil {
				t.Fatalf("%s line %d: %v", p, i+2, err)
			}
		}
		dir := filepath.Dir(p)
		s := stores[dir]
		if s == nil {
			s, _ = openStore(t)
			stores[dir] = s
		}
		if err := s.CreateSession(ctx, h, events); err != nil {
			t.Errorf("%s: CreateSession: %v", p, err)
			continue
		}
		ins, err := s.Inspect(ctx, h.ID)
		if err != nil {
			t.Errorf("%s: Inspect: %v", p, err)
			continue
		}
		if len(ins.Events) != len(events) || ins.Torn != nil {
			t.Errorf("%s: %d events back (torn %v), want %d", p, len(ins.Events), ins.Torn, len(events))
			continue
		}
		for i, e := range ins.Events {
			got, err := e.MarshalJSON()
			if err != nil || !bytes.Equal(got, lines[i+1]) {
				t.Errorf("%s line %d:\n got %s (%v)\nwant %s", p, i+2, got, err, lines[i+1])
				break
			}
		}
		if h.ParentSession != nil {
			found := false
			s.ChildrenOf(ctx, *h.ParentSession, func(c session.Header) error {
				found = found || c.ID == h.ID
				return nil
			})
			if !found {
				t.Errorf("%s: not listed among the children of %s", p, *h.ParentSession)
			}
		}
		stored++
	}
	if stored == 0 {
		t.Fatalf("no fixture log was stored (%d skipped)", skipped)
	}
	t.Logf("%d DSH logs round-tripped, %d skipped (packed rows or header the JSONL reader refuses)", stored, skipped)
}

func hasPackedRows(lines [][]byte) bool {
	for _, l := range lines {
		for _, tag := range []string{"text-chunks", "reasoning-chunks", "tool-call-chunks"} {
			if strings.HasPrefix(string(l), `{"type":"`+tag+`"`) {
				return true
			}
		}
	}
	return false
}
