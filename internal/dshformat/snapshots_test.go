package dshformat

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/dsh-project/dsh/internal/dshfixtures"
	"github.com/dsh-project/dsh/internal/session"
)

// snapshotScenarios returns every directory of DSH's snapshot fixtures that
// holds session logs, with the log files in it.
func snapshotScenarios(t *testing.T) map[string][]string {
	root := dshfixtures.Dir(t, "dsh-snapshots")
	files, err := filepath.Glob(filepath.Join(root, "*", "*", "session*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Skip("no snapshot logs found")
	}
	byDir := make(map[string][]string)
	for _, f := range files {
		byDir[filepath.Dir(f)] = append(byDir[filepath.Dir(f)], f)
	}
	return byDir
}

// storedLine is a fixture line decoded independently of the package, with
// encoding/json: enough to know what it must expand to.
type storedLine struct {
	raw   []byte
	Type  string          `json:"type"`
	Seq   *int64          `json:"seq"`
	Seq0  *int64          `json:"seq0"`
	Time0 int64           `json:"time0"`
	Data  json.RawMessage `json:"data"`
}

func storedLines(t *testing.T, path string) []storedLine {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []storedLine
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for first := true; sc.Scan(); first = false {
		if first {
			continue
		}
		var l storedLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		l.raw = append([]byte(nil), sc.Bytes()...)
		out = append(out, l)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

type rowPayload struct {
	Dt    []int64  `json:"dt"`
	Texts []string `json:"texts"`
	Args  []string `json:"args"`
}

// Every snapshot log reads without error or torn tail; every stored event
// line re-encodes to its exact bytes, and every packed row expands to
// assistant/chunk events at its seqs that pack back into the identical row.
func TestSnapshotLogsReadExactly(t *testing.T) {
	ctx := context.Background()
	for dir, files := range snapshotScenarios(t) {
		src := openJSONL(t, dir)
		if p := src.Problems(); len(p) > 0 {
			t.Fatalf("%s: problems %v", dir, p[0].Err)
		}
		hs, _ := src.Headers(ctx)
		if len(hs) != len(files) {
			t.Fatalf("%s: %d headers for %d files", dir, len(hs), len(files))
		}
		sessions := readAll(t, src)
		for _, s := range sessions {
			if s.Torn != nil {
				t.Errorf("%s: unexpected torn tail: %s", s.Location, s.Torn.Reason)
			}
			checkAgainstStoredLines(t, s, storedLines(t, s.Location))
		}
	}
}

func checkAgainstStoredLines(t *testing.T, s *Session, lines []storedLine) {
	t.Helper()
	encoded := dshfixtures.EncodeEvents(t, s.Events)
	next := int64(0)
	for _, l := range lines {
		if _, isRow := rowKindOf(l.Type); !isRow {
			if l.Seq == nil || *l.Seq != next {
				t.Fatalf("%s: line for seq %d has seq %v", s.Location, next, l.Seq)
			}
			if !bytes.Equal(encoded[next], l.raw) {
				t.Fatalf("%s: seq %d re-encodes differently:\n got %s\nwant %s", s.Location, next, encoded[next], l.raw)
			}
			next++
			continue
		}
		if *l.Seq0 != next {
			t.Fatalf("%s: row seq0 %d, expected %d", s.Location, *l.Seq0, next)
		}
		var p rowPayload
		if err := json.Unmarshal(l.Data, &p); err != nil {
			t.Fatal(err)
		}
		n := int64(len(p.Texts) + len(p.Args))
		members := s.Events[next : next+n]
		var run []chunkDelta
		for _, e := range members {
			d, err := classifyChunk(e)
			if err != nil {
				t.Fatalf("%s: expanded seq %d is not a packable delta: %s", s.Location, e.Seq, encoded[e.Seq])
			}
			run = append(run, d)
		}
		if repacked := appendJSONLRow(nil, run); !bytes.Equal(repacked, l.raw) {
			t.Fatalf("%s: row at seq0 %d does not pack back:\n got %s\nwant %s", s.Location, next, repacked, l.raw)
		}
		next += n
	}
	if next != int64(len(s.Events)) {
		t.Fatalf("%s: lines cover %d events, read %d", s.Location, next, len(s.Events))
	}
}

// The packed-chunks scenario: each row's members land at seq0+k with the
// row's k-th text and time time0+Σdt, checked against an independent
// decoding of the row.
func TestPackedChunksScenarioExpansion(t *testing.T) {
	path := filepath.Join(dshfixtures.Dir(t, "dsh-snapshots/acp-agent/packed-chunks"), "session.jsonl")
	s := readAll(t, openJSONL(t, path))
	var sess *Session
	for _, v := range s {
		sess = v
	}
	rows := 0
	for _, l := range storedLines(t, path) {
		if _, isRow := rowKindOf(l.Type); !isRow {
			continue
		}
		rows++
		var p rowPayload
		if err := json.Unmarshal(l.Data, &p); err != nil {
			t.Fatal(err)
		}
		payload := append(p.Texts, p.Args...)
		tm := l.Time0
		for k, text := range payload {
			e := sess.Events[*l.Seq0+int64(k)]
			var d struct {
				Chunk struct {
					Type           string  `json:"type"`
					Text           *string `json:"text"`
					ArgumentsDelta *string `json:"argumentsDelta"`
				} `json:"chunk"`
			}
			if err := json.Unmarshal(e.Data, &d); err != nil {
				t.Fatal(err)
			}
			got := d.Chunk.Text
			if l.Type == "tool-call-chunks" {
				got = d.Chunk.ArgumentsDelta
			}
			if e.Type != typeChunk || e.Seq != *l.Seq0+int64(k) || e.Time != tm || got == nil || *got != text {
				t.Fatalf("row %s seq0 %d member %d: got %s at time %d", l.Type, *l.Seq0, k, e.Data, e.Time)
			}
			if k < len(p.Dt) {
				tm += p.Dt[k]
			}
		}
	}
	if rows != 4 {
		t.Fatalf("packed-chunks holds %d rows, want 4", rows)
	}
}

// Write → read gives identical headers and events for every snapshot log,
// plain and zstd, packed and unpacked.
func TestSnapshotRoundTrip(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: rewrites every DSH snapshot session (about 5 s); go test ./... runs it")
	}
	ctx := context.Background()
	var all []*Session
	for dir := range snapshotScenarios(t) {
		for _, s := range readAll(t, openJSONL(t, dir)) {
			all = append(all, s)
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Location < all[j].Location })
	for _, opts := range []WriteOptions{{}, {Compression: CompressionNone}, {Unpacked: true}} {
		for _, s := range all {
			out := t.TempDir()
			path, err := WriteJSONL(ctx, out, s.Header, s.Events, opts)
			if err != nil {
				t.Fatalf("%s: %v", s.Location, err)
			}
			back := readAll(t, openJSONL(t, out))
			got, ok := back[s.Header.ID]
			if len(back) != 1 || !ok {
				t.Fatalf("%s: wrote %s, read back %d sessions", s.Location, path, len(back))
			}
			// Identity: a header without delegationDepth is written with 0
			// (DSH's JSONL requires it) and restored from the sidecar.
			assertSameHeader(t, s.Location, got.Header, s.Header)
			_, sideErr := os.Stat(filepath.Join(filepath.Dir(path), HeaderSidecarName))
			if (s.Header.DelegationDepth == nil) != (sideErr == nil) {
				t.Fatalf("%s: delegationDepth %v, sidecar: %v", s.Location, s.Header.DelegationDepth, sideErr)
			}
			dshfixtures.AssertSameEvents(t, s.Location, got.Events, s.Events)
			if got.Torn != nil {
				t.Fatalf("%s: torn after round trip", s.Location)
			}
		}
	}
}

// withDepth is h as it reads back from JSONL, which always stores
// delegationDepth.
func withDepth(h session.Header) session.Header {
	h.DelegationDepth = ptr(h.Depth())
	return h
}
