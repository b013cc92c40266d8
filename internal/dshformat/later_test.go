package dshformat

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/dsh-project/dsh/internal/dshfixtures"
	"github.com/dsh-project/dsh/internal/session"
)

// laterTokens are the ids the converted snapshots get.
var laterTokens = dshfixtures.LaterTokens{
	Sessions: map[int]string{1: "session-11111111-1111-4111-8111-111111111111", 2: "22222222-2222-4222-8222-222222222222"},
	Cwd:      "/home/dev/later",
}

// Every later-format snapshot reads after the §3 conversion with the
// header, cut and descriptor placement later-formats §8 lists, and passes
// dsh's validation of its format.
func TestLaterFixturesRead(t *testing.T) {
	ctx := context.Background()
	want := map[string]struct {
		seeded  bool
		cut     int64
		descSeq int64 // -1: no descriptor
		events  int
	}{
		"v2/snapshots/sdk/subagent-continuable/session.1.v2.jsonl":     {false, 0, 0, 26},
		"v2/snapshots/sdk/subagent-fork-in-process/session.1.v2.jsonl": {true, 15, 21, -1},
		"v3/snapshots/sdk/subagent-fork-in-process/session.1.v3.jsonl": {true, 16, 17, -1},
		"v4/snapshots/sdk/subagent-fork-in-process/session.v4.jsonl":   {false, 0, -1, 33},
		"v4/snapshots/sdk/subagent-fork-in-process/session.1.v4.jsonl": {true, 16, 17, 31},
		"v4/snapshots/sdk/subagent-continuable/session.1.v4.jsonl":     {false, 0, 0, 27},
	}
	for _, f := range dshfixtures.LaterFixtures {
		t.Run(f.Rel, func(t *testing.T) {
			raw := dshfixtures.LaterRawLog(t, f, laterTokens)
			dir := t.TempDir()
			name := LogFileName(f.Version, CompressionNone)
			writeFile(t, dir, filepath.Join("--home-dev-later--", laterSessionDir(t, raw), name), raw)
			src := openJSONL(t, dir)
			sessions := readAll(t, src)
			if len(sessions) != 1 || len(src.Problems()) != 0 {
				t.Fatalf("sessions %d, problems %v", len(sessions), src.Problems())
			}
			s := sessions[laterTokens.Sessions[1]]
			if s == nil {
				s = sessions[laterTokens.Sessions[2]]
			}
			w := want[f.Rel]
			h := s.Header
			if h.Version != f.Version || h.IsSeeded() != w.seeded || h.InheritedCut() != w.cut || s.Torn != nil {
				t.Fatalf("header %s cut %d torn %v", h.MarshalJSONL(), h.InheritedCut(), s.Torn)
			}
			if w.events >= 0 && len(s.Events) != w.events {
				t.Errorf("%d events, want %d", len(s.Events), w.events)
			}
			descSeq := int64(-1)
			for _, e := range s.Events {
				if e.Type == session.TypeDescriptor {
					descSeq = e.Seq
				}
			}
			if descSeq != w.descSeq {
				t.Errorf("descriptor at %d, want %d", descSeq, w.descSeq)
			}
			if err := session.ValidateLog(h, s.Events); err != nil {
				t.Fatalf("validation: %v", err)
			}
			// Written back unpacked and uncompressed, the log is the raw
			// log byte for byte.
			out := t.TempDir()
			path, err := WriteJSONL(ctx, out, h, s.Events, WriteOptions{Compression: CompressionNone})
			if err != nil {
				t.Fatal(err)
			}
			if filepath.Base(path) != name {
				t.Errorf("written as %s, want %s", filepath.Base(path), name)
			}
			if got := readFile(t, path); !bytes.Equal(got, raw) {
				t.Errorf("written log differs from the raw log:\n%s\nwant\n%s", got, raw)
			}
		})
	}
}

// laterLog builds a plain later-format log from a header line and event
// lines without seq/time (added in order).
func laterLog(header string, events ...string) []byte {
	var b bytes.Buffer
	b.WriteString(header + "\n")
	for i, e := range events {
		b.WriteString(strings.Replace(e, `",`, `","seq":`+itoa(i)+`,"time":`+itoa(1000+i)+`,`, 1) + "\n")
	}
	return b.Bytes()
}

func itoa(i int) string { return strconv.Itoa(i) }

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

const (
	v4Header     = `{"type":"session","version":4,"id":"c","createdAt":5,"cwd":"/w","parentSession":"p","isSeeded":false,"origin":"subagent","delegationDepth":1}`
	v4SeedHeader = `{"type":"session","version":4,"id":"c","createdAt":5,"cwd":"/w","parentSession":"p","isSeeded":true,"origin":"subagent","delegationDepth":1}`
	v4Desc       = `{"type":"subagent/descriptor","data":{"version":3,"mode":"continuable","provider":"spawn","label":"L","agentProvider":"x","agentModel":"y"}}`
	v4TurnStart  = `{"type":"turn/start","data":{"turn":1}}`
	v4TurnEnd    = `{"type":"turn/end","data":{"turn":1,"reason":{"kind":"completed"}}}`
)

// zstdFrames compresses each part as its own frame and concatenates them,
// as DSH flushes one frame per batch.
func zstdFrames(t testing.TB, parts ...[]byte) []byte {
	t.Helper()
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderCRC(true))
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	var out []byte
	for _, p := range parts {
		out = enc.EncodeAll(p, out)
	}
	return out
}

// Hand-built cases for the rules later-formats marks.
func TestLaterFormatRules(t *testing.T) {
	ctx := context.Background()
	full := laterLog(v4Header, v4Desc, v4TurnStart, v4TurnEnd)
	lines := bytes.SplitAfter(full, []byte("\n"))
	header, body := lines[0], bytes.Join(lines[1:], nil)

	t.Run("highest generation wins", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, dir, "p/c/session.jsonl", []byte(`{"type":"session","version":0,"id":"c","createdAt":5,"delegationDepth":1}`+"\n"))
		writeFile(t, dir, "p/c/session.v3.jsonl.zstd", []byte("stale generation, never read"))
		writeFile(t, dir, "p/c/session.v4.jsonl", full)
		writeFile(t, dir, "p/c/session.lock", nil)
		writeFile(t, dir, "p/c/session.v4.jsonl.1a2b.tmp", []byte("x"))
		writeFile(t, dir, "p/c/session.v04.jsonl", []byte("x"))
		src := openJSONL(t, dir)
		s := readAll(t, src)["c"]
		if s == nil || s.Header.Version != 4 || len(s.Events) != 3 || len(src.Problems()) != 0 {
			t.Fatalf("session %+v problems %v", s, src.Problems())
		}
	})
	t.Run("future generation refused, no fallback", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, dir, "p/c/session.v4.jsonl", full)
		writeFile(t, dir, "p/c/session.v5.jsonl", bytes.Replace(full, []byte(`"version":4`), []byte(`"version":5`), 1))
		src := openJSONL(t, dir)
		hs, _ := src.Headers(ctx)
		if len(hs) != 1 || hs[0].ID != "c" || hs[0].Version != 5 {
			t.Fatalf("headers %+v", hs)
		}
		_, err := src.Read(ctx, "c")
		if r := asRefusal(t, err); r.Version != "5" || !strings.Contains(err.Error(), "session.v5.jsonl") {
			t.Fatalf("refusal %v", err)
		}
	})
	t.Run("header does not match file name", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, dir, "p/c/session.v3.jsonl", full)
		src := openJSONL(t, dir)
		_, err := src.Read(ctx, "c")
		if r := asRefusal(t, err); r.Version != "4" || !strings.Contains(err.Error(), "does not match the file name's generation 3") {
			t.Fatalf("refusal %v", err)
		}
	})
	t.Run("both compressions of one generation", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, dir, "p/c/session.v4.jsonl", full)
		writeFile(t, dir, "p/c/session.v4.jsonl.zstd", zstdFrames(t, header, body))
		src := openJSONL(t, dir)
		if hs, _ := src.Headers(ctx); len(hs) != 1 {
			t.Fatalf("headers %+v", hs)
		}
		_, err := src.Read(ctx, "c")
		if ce := asCorrupt(t, err); !strings.Contains(ce.Msg, "both compressions") {
			t.Fatalf("error %v", err)
		}
	})
	t.Run("multi-frame zstd with a torn last frame", func(t *testing.T) {
		frames := zstdFrames(t, header, lines[1], lines[2], lines[3])
		last := zstdFrames(t, lines[3])
		torn := frames[:len(frames)-len(last)/2]
		dir := t.TempDir()
		writeFile(t, dir, "p/c/session.v4.jsonl.zstd", torn)
		s := readAll(t, openJSONL(t, dir))["c"]
		if s.Torn == nil || len(s.Events) != 2 || s.Header.Version != 4 {
			t.Fatalf("events %d torn %+v", len(s.Events), s.Torn)
		}
		if err := session.ValidateLog(s.Header, s.Events); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("header key outside the format", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, dir, "p/c/session.v4.jsonl", bytes.Replace(full, []byte(`"delegationDepth":1`), []byte(`"delegationDepth":1,"mood":"x"`), 1))
		src := openJSONL(t, dir)
		_, err := src.Read(ctx, "c")
		if r := asRefusal(t, err); !strings.Contains(r.Detail, `"mood"`) {
			t.Fatalf("refusal %v", err)
		}
	})
	t.Run("range-form sourceEventSeqs refused", func(t *testing.T) {
		dir := t.TempDir()
		log := laterLog(v4Header, v4Desc, v4TurnStart,
			`{"type":"tool/call","data":{"turn":1,"step":1,"callId":"k","name":"n","arguments":"{}"}}`,
			`{"type":"tool/result","data":{"turn":1,"step":1,"message":{"role":"tool","source":{"kind":"tool","callId":"k"},"toolCallId":"k","content":[],"isError":false,"id":"m"}},"sourceEventSeqs":[[0,2]],"surfaceOp":"append"}`)
		writeFile(t, dir, "p/c/session.v4.jsonl", log)
		_, err := openJSONL(t, dir).Read(ctx, "c")
		if r := asRefusal(t, err); !strings.Contains(r.Detail, "range-form") {
			t.Fatalf("refusal %v", err)
		}
	})
	t.Run("packed rows are not a later format's", func(t *testing.T) {
		dir := t.TempDir()
		log := laterLog(v4Header, v4Desc, `{"type":"text-chunks","data":{}}`)
		writeFile(t, dir, "p/c/session.v4.jsonl", log)
		s := readAll(t, openJSONL(t, dir))["c"]
		err := session.ValidateLog(s.Header, s.Events)
		var ve *session.ValidationError
		if len(s.Events) != 2 || !asValidation(err, &ve) || ve.Rule != session.RuleUnknownType {
			t.Fatalf("events %d, validation %v", len(s.Events), err)
		}
	})
	t.Run("seeded without a tagged marker", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, dir, "p/c/session.v4.jsonl", laterLog(v4SeedHeader, v4Desc, `{"type":"session/end-seed","data":{}}`))
		s := readAll(t, openJSONL(t, dir))["c"]
		err := session.ValidateLog(s.Header, s.Events)
		var ve *session.ValidationError
		if !asValidation(err, &ve) || ve.Rule != session.RuleLineageMarker {
			t.Fatalf("validation %v", err)
		}
	})
	t.Run("unseeded with an untagged marker mid-log", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, dir, "p/c/session.v4.jsonl", laterLog(v4Header, v4Desc, v4TurnStart, v4TurnEnd, `{"type":"session/end-seed","data":{}}`))
		s := readAll(t, openJSONL(t, dir))["c"]
		if err := session.ValidateLog(s.Header, s.Events); err != nil || s.Header.IsSeeded() {
			t.Fatalf("validation %v", err)
		}
	})
	t.Run("nested fork: the last tagged marker is the cut", func(t *testing.T) {
		dir := t.TempDir()
		tagged := `{"type":"session/end-seed","data":{"inherited":true}}`
		writeFile(t, dir, "p/c/session.v4.jsonl", laterLog(v4SeedHeader, v4Desc, tagged, v4TurnStart, v4TurnEnd, tagged, v4Desc))
		s := readAll(t, openJSONL(t, dir))["c"]
		if s.Header.InheritedCut() != 4 {
			t.Fatalf("cut %d", s.Header.InheritedCut())
		}
		if err := session.ValidateLog(s.Header, s.Events); err != nil {
			t.Fatal(err)
		}
	})
}

func asValidation(err error, target **session.ValidationError) bool {
	return errors.As(err, target)
}

// laterSessionDir is the directory DSH keeps the log raw in: its header's
// id, encoded (DSH verifies that path identity).
func laterSessionDir(t *testing.T, raw []byte) string {
	t.Helper()
	line, _, _ := bytes.Cut(raw, []byte("\n"))
	h, _, err := decodeHeader(line)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := EncodeSegment(h.ID)
	if err != nil {
		t.Fatal(err)
	}
	return dir
}
