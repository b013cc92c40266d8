package transfer

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/dsh-project/dsh/internal/dshfixtures"
	"github.com/dsh-project/dsh/internal/dshformat"
	"github.com/dsh-project/dsh/internal/session"
)

// Every later-format snapshot (converted to a raw log, later-formats §3)
// round-trips: imported, the store keeps its format; exported without a
// compression choice it comes back as session.vN.jsonl byte for byte; that
// export imports again to the same header and events. The same log
// imported from multi-frame zstd is exported back as zstd with the same
// content.
func TestLaterFormatsRoundTrip(t *testing.T) {
	ctx := context.Background()
	tokens := dshfixtures.LaterTokens{
		Sessions: map[int]string{1: "session-00000000-0000-4000-8000-000000000001", 2: "00000000-0000-4000-8000-000000000002"},
		Cwd:      "/home/dev/later",
	}
	for _, f := range dshfixtures.LaterFixtures {
		for _, compression := range []dshformat.Compression{dshformat.CompressionNone, dshformat.CompressionZstd} {
			name := dshformat.LogFileName(f.Version, compression)
			t.Run(f.Rel+"/"+name, func(t *testing.T) {
				raw := dshfixtures.LaterRawLog(t, f, tokens)
				stored := raw
				if compression == dshformat.CompressionZstd {
					stored = multiFrame(t, raw)
				}
				in := t.TempDir()
				writeRaw(t, filepath.Join(in, "--home-dev-later--", laterSessionDir(t, raw), name), stored)

				first := openStore(t)
				sum := importAll(t, first, corpusAt{dshformat.OpenJSONL, in})
				if sum.Imported != 1 || sum.Failed() {
					t.Fatalf("import: %+v", sum)
				}
				id := sum.Results[0].ID
				if r := sum.Results[0]; r.Invalid != "" || !r.Checkpointed {
					t.Fatalf("imported %+v", r)
				}
				format, err := first.SourceFormat(ctx, id)
				if err != nil || format != dshformat.FormatName(f.Version, compression) {
					t.Fatalf("source format %q, %v", format, err)
				}

				out := t.TempDir()
				exported, err := Export(ctx, first, out, []string{id}, ExportOptions{AsImported: true})
				if err != nil || len(exported) != 1 || exported[0].Err != nil {
					t.Fatalf("export %+v %v", exported, err)
				}
				if filepath.Base(exported[0].Path) != name {
					t.Fatalf("exported as %s, want %s", exported[0].Path, name)
				}
				got, err := os.ReadFile(exported[0].Path)
				if err != nil {
					t.Fatal(err)
				}
				if compression == dshformat.CompressionNone && !bytes.Equal(got, raw) {
					t.Fatalf("export is not the raw log byte for byte:\n%s\nwant\n%s", got, raw)
				}
				if compression == dshformat.CompressionZstd && !bytes.Equal(decompress(t, got), raw) {
					t.Fatal("the zstd export does not decompress to the raw log")
				}

				second := openStore(t)
				if sum := importAll(t, second, corpusAt{dshformat.OpenJSONL, out}); sum.Imported != 1 || sum.Failed() {
					t.Fatalf("second import: %+v", sum)
				}
				a, err := first.Audit(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				b, err := second.Audit(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(a.Header.MarshalJSONL(), b.Header.MarshalJSONL()) || a.Header.InheritedCut() != b.Header.InheritedCut() || a.Header.Version != f.Version {
					t.Fatalf("headers differ: %s cut %d, %s cut %d", a.Header.MarshalJSONL(), a.Header.InheritedCut(), b.Header.MarshalJSONL(), b.Header.InheritedCut())
				}
				dshfixtures.AssertSameEvents(t, "re-imported events", b.Events, a.Events)
				if err := session.ValidateLog(b.Header, b.Events); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

func writeRaw(t testing.TB, path string, content []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, content, 0o600); err != nil {
		t.Fatal(err)
	}
}

// multiFrame compresses a log as DSH flushes it: the header alone, then one
// frame per event line.
func multiFrame(t testing.TB, log []byte) []byte {
	t.Helper()
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderCRC(true))
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	var out []byte
	for _, line := range bytes.SplitAfter(log, []byte("\n")) {
		if len(line) > 0 {
			out = enc.EncodeAll(line, out)
		}
	}
	return out
}

func decompress(t testing.TB, data []byte) []byte {
	t.Helper()
	dec, err := zstd.NewReader(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	out, err := dec.DecodeAll(data, nil)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// laterSessionDir is the directory DSH keeps the log raw in: its header's
// id, encoded (DSH verifies that path identity).
func laterSessionDir(t *testing.T, raw []byte) string {
	t.Helper()
	line, _, _ := bytes.Cut(raw, []byte("\n"))
	var h struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(line, &h); err != nil {
		t.Fatal(err)
	}
	dir, err := dshformat.EncodeSegment(h.ID)
	if err != nil {
		t.Fatal(err)
	}
	return dir
}
