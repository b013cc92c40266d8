package session

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// snapshotRoot holds session logs written by DSH itself (see the fixtures
// README); tests read them in place.
const snapshotRoot = "../../../shared/fixtures/dsh-snapshots"

// fixtureCwd replaces the test harness's {{cwd}} placeholder, which DSH's
// header validation would reject as a relative path.
const fixtureCwd = "/home/user/project"

var packedTags = []string{`{"type":"text-chunks",`, `{"type":"reasoning-chunks",`, `{"type":"tool-call-chunks",`}

type fixtureLog struct {
	path   string
	header []byte
	lines  [][]byte // event lines, packed rows included
	packed bool
}

func loadFixtureLogs(t testing.TB) []fixtureLog {
	t.Helper()
	if _, err := os.Stat(snapshotRoot); err != nil {
		t.Skipf("DSH snapshot fixtures not available at %s: %v", snapshotRoot, err)
	}
	var logs []fixtureLog
	err := filepath.WalkDir(snapshotRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasPrefix(d.Name(), "session") || !strings.HasSuffix(d.Name(), ".jsonl") {
			return err
		}
		raw, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		lines := bytes.Split(bytes.TrimSuffix(raw, []byte("\n")), []byte("\n"))
		log := fixtureLog{path: p, header: lines[0], lines: lines[1:]}
		for _, l := range log.lines {
			if isPackedRow(l) {
				log.packed = true
			}
		}
		logs = append(logs, log)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(logs) == 0 {
		t.Skipf("no session*.jsonl under %s", snapshotRoot)
	}
	return logs
}

func isPackedRow(line []byte) bool {
	for _, tag := range packedTags {
		if bytes.HasPrefix(line, []byte(tag)) {
			return true
		}
	}
	return false
}

// decodeFixture returns the header (with an absolute cwd) and the events of
// a log without packed rows.
func decodeFixture(t testing.TB, log fixtureLog) (Header, []Event) {
	t.Helper()
	h, err := ParseHeaderJSON(fixtureHeaderLine(log.header))
	if err != nil {
		t.Fatalf("%s: header: %v", log.path, err)
	}
	if h.Cwd != nil && *h.Cwd == "{{cwd}}" {
		cwd := fixtureCwd
		h.Cwd = &cwd
	}
	events := make([]Event, 0, len(log.lines))
	for i, l := range log.lines {
		var e Event
		if err := e.UnmarshalJSON(l); err != nil {
			t.Fatalf("%s line %d: %v", log.path, i+2, err)
		}
		events = append(events, e)
	}
	return h, events
}

// fixtureHeaderLine adds the delegationDepth a few snapshot headers lack
// (the snapshot harness serialised those from an in-memory header; DSH's JSONL
// backend always writes the field and refuses a header without it).
func fixtureHeaderLine(line []byte) []byte {
	if bytes.Contains(line, []byte(`"delegationDepth"`)) {
		return line
	}
	return append(bytes.TrimSuffix(slices.Clone(line), []byte("}")), `,"delegationDepth":0}`...)
}

func TestFixtureEventLinesRoundTripByteExact(t *testing.T) {
	lines := 0
	for _, log := range loadFixtureLogs(t) {
		for i, l := range log.lines {
			if isPackedRow(l) {
				continue
			}
			var e Event
			if err := e.UnmarshalJSON(l); err != nil {
				t.Fatalf("%s line %d: decode: %v", log.path, i+2, err)
			}
			got, err := e.MarshalJSON()
			if err != nil {
				t.Fatalf("%s line %d: encode: %v", log.path, i+2, err)
			}
			if !bytes.Equal(got, l) {
				t.Fatalf("%s line %d: re-encoded differently\n got %s\nwant %s", log.path, i+2, got, l)
			}
			lines++
		}
	}
	t.Logf("%d event lines round-tripped", lines)
}

func TestFixtureHeaderLinesRoundTripByteExact(t *testing.T) {
	for _, log := range loadFixtureLogs(t) {
		h, err := ParseHeaderJSON(log.header)
		if !bytes.Contains(log.header, []byte(`"delegationDepth"`)) {
			var ve *ValidationError
			if !errors.As(err, &ve) || ve.Rule != RuleHeaderShape {
				t.Errorf("%s: header without delegationDepth: got %v, want a %s refusal", log.path, err, RuleHeaderShape)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", log.path, err)
		}
		if got := h.MarshalJSONL(); !bytes.Equal(got, log.header) {
			t.Errorf("%s: header re-encoded differently\n got %s\nwant %s", log.path, got, log.header)
		}
	}
}

func TestFixtureLogsWithoutPackedRowsValidate(t *testing.T) {
	validated := 0
	for _, log := range loadFixtureLogs(t) {
		if log.packed {
			continue
		}
		h, events := decodeFixture(t, log)
		if err := ValidateLog(h, events); err != nil {
			t.Errorf("%s: %v", log.path, err)
		}
		validated++
	}
	if validated == 0 {
		t.Fatal("every fixture log has packed rows; nothing was validated")
	}
	t.Logf("%d fixture logs validated", validated)
}
