package sqlitepersist

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-project/dsh/internal/dshfixtures"
	"github.com/dsh-project/dsh/internal/dshformat"
	"github.com/dsh-project/dsh/internal/session"
)

// refusedHeaders are the fixture logs whose header DSH 0.1.0-rc.8's reader,
// and so dsh's, refuses, with the reason. ralph-loop's logs were written
// without delegationDepth, which that reader requires.
var refusedHeaders = map[string]string{
	"headless-agent/ralph-loop/session.jsonl":   "delegationDepth is not a non-negative safe integer",
	"headless-agent/ralph-loop/session.1.jsonl": "delegationDepth is not a non-negative safe integer",
	"headless-agent/ralph-loop/session.2.jsonl": "delegationDepth is not a non-negative safe integer",
}

// TestDSHLogsRoundTripByteExact stores every DSH-written log through
// CreateSession and checks Inspect hands back events that encode to DSH's
// exact lines. A log with packed chunk rows (a JSONL storage detail) is
// stored as its logical events, as dsh's JSONL reader expands them, and
// must come back as exactly those. A log whose header is refused must be one
// of refusedHeaders, refused for its reason.
func TestDSHLogsRoundTripByteExact(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: every DSH snapshot log round trip (about 7 s); go test ./... runs it")
	}
	snapshotDir := dshfixtures.Dir(t, "dsh-snapshots")
	ctx := context.Background()
	paths, err := filepath.Glob(filepath.Join(snapshotDir, "*", "*", "session*.jsonl"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no session logs under %s (%v)", snapshotDir, err)
	}
	stores := map[string]*Store{} // one per scenario: ids repeat across scenarios
	stored, packed, logical, refused := 0, 0, 0, 0
	for _, p := range paths {
		rel, err := filepath.Rel(snapshotDir, p)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		lines := bytes.Split(bytes.TrimSuffix(raw, []byte("\n")), []byte("\n"))
		headerLine := bytes.ReplaceAll(lines[0], []byte(`"cwd":"{{cwd}}"`), []byte(`"cwd":"/home/user/project"`))
		h, err := session.ParseHeaderJSON(headerLine)
		reason, named := refusedHeaders[filepath.ToSlash(rel)]
		switch {
		case err != nil && !named:
			t.Errorf("%s: header refused: %v", rel, err)
			continue
		case err != nil:
			if !strings.Contains(err.Error(), reason) {
				t.Errorf("%s: header refused with %q, want %q", rel, err, reason)
			}
			refused++
			continue
		case named:
			t.Errorf("%s: header accepted, want it refused (%s)", rel, reason)
		}
		// want is each event's DSH encoding: the lines themselves, or the
		// logical events of a log with packed rows.
		var events []session.Event
		var want [][]byte
		if hasPackedRows(lines[1:]) {
			events = logicalEvents(ctx, t, p)
			want = dshfixtures.EncodeEvents(t, events)
			if len(events) <= len(lines)-1 {
				t.Errorf("%s: %d packed lines read as %d logical events, want more", rel, len(lines)-1, len(events))
			}
			packed++
			logical += len(events)
		} else {
			events = make([]session.Event, len(lines)-1)
			for i, l := range lines[1:] {
				if err := events[i].UnmarshalJSON(l); err != nil {
					t.Fatalf("%s line %d: %v", rel, i+2, err)
				}
			}
			want = lines[1:]
		}
		dir := filepath.Dir(p)
		s := stores[dir]
		if s == nil {
			s, _ = openStore(t)
			stores[dir] = s
		}
		if err := s.CreateSession(ctx, h, events); err != nil {
			t.Errorf("%s: CreateSession: %v", rel, err)
			continue
		}
		ins, err := s.Inspect(ctx, h.ID)
		if err != nil {
			t.Errorf("%s: Inspect: %v", rel, err)
			continue
		}
		if len(ins.Events) != len(want) || ins.Torn != nil {
			t.Errorf("%s: %d events back (torn %v), want %d", rel, len(ins.Events), ins.Torn, len(want))
			continue
		}
		for i, e := range ins.Events {
			got, err := e.MarshalJSON()
			if err != nil || !bytes.Equal(got, want[i]) {
				t.Errorf("%s event %d:\n got %s (%v)\nwant %s", rel, i, got, err, want[i])
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
				t.Errorf("%s: not listed among the children of %s", rel, *h.ParentSession)
			}
		}
		stored++
	}
	if refused != len(refusedHeaders) {
		t.Errorf("%d headers refused, want the %d named", refused, len(refusedHeaders))
	}
	if stored+refused != len(paths) {
		t.Errorf("%d of %d logs stored, %d refused", stored, len(paths), refused)
	}
	t.Logf("%d DSH logs round-tripped (%d of them with packed rows, as %d logical events); %d refused headers, each named", stored, packed, logical, refused)
}

// logicalEvents is the log at path as dsh's JSONL reader gives it: packed
// chunk rows expanded into the events they stand for.
func logicalEvents(ctx context.Context, t *testing.T, path string) []session.Event {
	t.Helper()
	src, err := dshformat.OpenJSONL(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	hs, err := src.Headers(ctx)
	if err != nil || len(hs) != 1 {
		t.Fatalf("%s: headers %v, %v", path, hs, err)
	}
	read, err := src.Read(ctx, hs[0].ID)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if read.Torn != nil || read.Damage != nil {
		t.Fatalf("%s: read with torn tail %+v, damage %+v", path, read.Torn, read.Damage)
	}
	return read.Events
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
