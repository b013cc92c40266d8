package dshformat

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/dsh-project/dsh/internal/dshfixtures"
	"github.com/dsh-project/dsh/internal/session"
)

func frameOf(t testing.TB, plain string) []byte {
	t.Helper()
	enc, err := frameEncoder()
	if err != nil {
		t.Fatal(err)
	}
	return enc.EncodeAll([]byte(plain), nil)
}

func readZstd(t *testing.T, content []byte) (*Session, error) {
	t.Helper()
	path := writeFile(t, t.TempDir(), "s/session.jsonl.zstd", content)
	return readJSONLFile(context.Background(), path, true)
}

// noisyEvents are events whose text does not compress well, so that a
// frame of them spans several 128 KiB blocks.
func noisyEvents(n int) []session.Event {
	r := rand.New(rand.NewPCG(1, 2))
	events := make([]session.Event, n)
	for i := range events {
		var b strings.Builder
		for range 200 {
			b.WriteByte(byte('a' + r.IntN(26)))
		}
		events[i] = event(int64(i), "session/title", fmt.Sprintf(`{"title":%q}`, b.String()))
	}
	return events
}

func writeZstdLog(t *testing.T, events []session.Event) []byte {
	t.Helper()
	h := session.Header{ID: "s", CreatedAt: 1, Cwd: ptr("/w"), DelegationDepth: ptr(int64(0))}
	path, err := WriteJSONL(context.Background(), t.TempDir(), h, events, WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// DSH's default layout: a header frame and one frame per batch, each with
// the checksum flag, read back exactly.
func TestZstdLogFrames(t *testing.T) {
	events := noisyEvents(3000)
	data := writeZstdLog(t, events)
	scan, err := scanFrames(data)
	if err != nil || len(scan.frames) != 2 || scan.tornStart != -1 {
		t.Fatalf("scan %+v, %v", scan, err)
	}
	for _, f := range scan.frames {
		if !bytes.Equal(data[f.start:f.start+4], zstdMagic[:]) || f.descriptor&0x04 == 0 {
			t.Fatalf("frame at %d lacks magic or checksum flag", f.start)
		}
	}
	if len(scan.frames[1].blocks) < 3 {
		t.Fatalf("event frame has %d blocks; the torn-frame tests need several", len(scan.frames[1].blocks))
	}
	s, err := readZstd(t, data)
	if err != nil {
		t.Fatal(err)
	}
	dshfixtures.AssertSameEvents(t, "zstd", s.Events, events)
}

// A torn final frame keeps every event in its complete blocks (DSH's
// libzstd streams them out; klauspost needs the frame rebuilt); a tear in
// the checksum alone recovers everything. The recovered events are a
// prefix of the log and the marker is the frame start.
func TestZstdTornFinalFrameSalvage(t *testing.T) {
	events := noisyEvents(3000)
	data := writeZstdLog(t, events)
	scan, _ := scanFrames(data)
	last := scan.frames[1]
	cuts := []int{len(data) - 1, len(data) - 4, last.start + 2, last.start + 7}
	for _, b := range last.blocks[:len(last.blocks)-1] {
		cuts = append(cuts, b, b+1, b+1000)
	}
	for _, cut := range cuts {
		s, err := readZstd(t, data[:cut])
		if err != nil {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		if s.Torn == nil || s.Torn.Marker != int64(last.start) || !bytes.Equal(s.Torn.Raw, data[last.start:cut]) {
			t.Fatalf("cut at %d: torn %+v", cut, s.Torn)
		}
		if s.Torn.Recovered != len(s.Events) || s.Torn.FromSeq != int64(len(s.Events)) {
			t.Fatalf("cut at %d: recovered %d of %d events", cut, s.Torn.Recovered, len(s.Events))
		}
		dshfixtures.AssertSameEvents(t, fmt.Sprintf("cut at %d", cut), s.Events, events[:len(s.Events)])
		checksumOnly := cut >= len(data)-4
		if checksumOnly && len(s.Events) != len(events) {
			t.Fatalf("checksum-only tear at %d recovered %d of %d events", cut, len(s.Events), len(events))
		}
		if cut > last.blocks[0]+1 && len(s.Events) == 0 {
			t.Fatalf("cut at %d after a complete block recovered nothing", cut)
		}
	}
}

// Structural damage and validation failures (§2.4).
func TestZstdLogFailures(t *testing.T) {
	header := frameOf(t, testHeaderLine+"\n")
	events := frameOf(t, turnStart(0)+"\n"+turnEnd(1)+"\n")
	corruptChecksum := bytes.Clone(events)
	corruptChecksum[len(corruptChecksum)-1] ^= 0xff
	// A frame declaring 1 TiB of content in 8 bytes of content size, one
	// raw 5-byte block and a checksum.
	hugeFCS := append(append(zstdMagic[:], 0xE4, 0, 0, 0, 0, 0, 1, 0, 0), 0x29, 0, 0, 'a', 'b', 'c', 'd', 'e', 0, 0, 0, 0)
	// A frame asking for a 2 TiB window.
	hugeWindow := append(append(zstdMagic[:], 0x04, 0xF8), 0x29, 0, 0, 'a', 'b', 'c', 'd', 'e', 0, 0, 0, 0)
	for _, c := range []struct {
		name    string
		content []byte
		err     string
		torn    string
	}{
		{"empty file", nil, "empty or header-less Zstandard session log", ""},
		{"partial magic only", zstdMagic[:2], "empty or header-less", ""},
		{"two-line header frame", frameOf(t, testHeaderLine+"\n"+turnStart(0)+"\n"), "first frame is not exactly one header line", ""},
		{"header frame without newline", frameOf(t, testHeaderLine), "first frame is not exactly one header line", ""},
		{"invalid magic", cat(header, []byte("JUNKJUNK")), "invalid frame magic at byte", ""},
		{"reserved header bit", cat(header, zstdMagic[:], []byte{0x08, 0, 0, 0}), "reserved frame-header bit", ""},
		{"reserved block type", cat(header, zstdMagic[:], []byte{0x20, 0x05, 0x07, 0, 0}), "reserved block type", ""},
		{"bad checksum", cat(header, corruptChecksum), "frame at byte", ""},
		{"unterminated line in a complete frame", cat(header, frameOf(t, turnStart(0)+"\n"+`{"type":"x"`)), "complete frame contains a torn JSONL record", ""},
		{"unparsable line in a complete frame", cat(header, frameOf(t, turnStart(0)+"\ngarbage\n")), "complete frame contains a torn JSONL record", ""},
		{"declared content size over the limit", cat(header, hugeFCS), "exceeds dsh's size limit", ""},
		{"window over the limit", cat(header, hugeWindow), "exceeds dsh's size limit", ""},
		{"torn frame with a hostile window", cat(header, events, hugeWindow[:len(hugeWindow)-2]), "", "torn final Zstandard frame"},
		{"partial magic after frames", cat(header, events, zstdMagic[:2]), "", "torn final Zstandard frame"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := readZstd(t, c.content)
			if c.err != "" {
				asCorrupt(t, err)
				if !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.Torn == nil || !strings.Contains(s.Torn.Reason, c.torn) || s.Torn.Recovered != 0 || len(s.Events) != 2 {
				t.Fatalf("torn %+v with %d events", s.Torn, len(s.Events))
			}
		})
	}
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// Listing reads only the header frame: a damaged event frame does not hide
// the session, reading it reports the damage.
func TestZstdListingReadsOnlyTheHeaderFrame(t *testing.T) {
	ctx := context.Background()
	events := frameOf(t, turnStart(0)+"\n")
	events[len(events)-1] ^= 0xff
	dir := t.TempDir()
	writeFile(t, dir, "--w--/s/session.jsonl.zstd", cat(frameOf(t, testHeaderLine+"\n"), events))
	src := openJSONL(t, dir)
	if hs, _ := src.Headers(ctx); len(hs) != 1 || hs[0].ID != "s" {
		t.Fatalf("headers %+v, problems %v", hs, src.Problems())
	}
	_, err := src.Read(ctx, "s")
	if ce := asCorrupt(t, err); ce.Frame <= 0 {
		t.Fatalf("error %v names no frame", err)
	}
}

// The structural scanner finds frame ends for every header layout, and
// every proper prefix of a frame is a torn tail, never an error.
func TestScanFrameHeaderVariants(t *testing.T) {
	rawBlock := func(last bool, payload string) []byte {
		h := uint32(len(payload)) << 3
		if last {
			h |= 1
		}
		return append([]byte{byte(h), byte(h >> 8), byte(h >> 16)}, payload...)
	}
	rleBlock := func(last bool, n int) []byte {
		h := uint32(n)<<3 | 1<<1
		if last {
			h |= 1
		}
		return []byte{byte(h), byte(h >> 8), byte(h >> 16), 'r'}
	}
	for _, c := range []struct {
		descriptor byte
		header     []byte // window, dictionary id and content size bytes
	}{
		{0x00, []byte{0x58}},
		{0x21, []byte{7, 12}},
		{0x42, []byte{0x58, 1, 2, 3, 4}},
		{0x83, []byte{0x58, 1, 2, 3, 4, 5, 6, 7, 8}},
		{0xE3, []byte{1, 2, 3, 4, 1, 2, 3, 4, 5, 6, 7, 8}},
		{0x24, []byte{9}},
	} {
		f := cat(zstdMagic[:], []byte{c.descriptor}, c.header, rawBlock(false, "hello"), rleBlock(false, 300), rawBlock(true, "end"))
		if c.descriptor&0x04 != 0 {
			f = append(f, 1, 2, 3, 4)
		}
		scan, err := scanFrames(cat(f, f))
		if err != nil || len(scan.frames) != 2 || scan.frames[0].end != len(f) || scan.tornStart != -1 {
			t.Fatalf("descriptor %#x: scan %+v, %v", c.descriptor, scan, err)
		}
		for cut := 1; cut < len(f); cut++ {
			scan, err := scanFrames(f[:cut])
			if err != nil || len(scan.frames) != 0 || scan.tornStart != 0 {
				t.Fatalf("descriptor %#x cut %d: scan %+v, %v", c.descriptor, cut, scan, err)
			}
		}
	}
}

// rebuildTornFrame yields, for every truncation of a real multi-block
// frame, a frame that decodes to a prefix of the plaintext.
func TestRebuildTornFrameYieldsPrefixes(t *testing.T) {
	var plain strings.Builder
	for _, e := range noisyEvents(2000) {
		plain.Write(e.Data)
		plain.WriteByte('\n')
	}
	f := frameOf(t, plain.String())
	dec, err := logDecoder()
	if err != nil {
		t.Fatal(err)
	}
	for cut := 1; cut < len(f); cut += 4099 {
		scan, err := scanFrames(f[:cut])
		if err != nil || scan.tornStart != 0 {
			t.Fatalf("cut %d: %+v %v", cut, scan, err)
		}
		rebuilt := rebuildTornFrame(f[:cut], scan.torn)
		if rebuilt == nil {
			continue
		}
		out, err := decodeFrame(dec, rebuilt, nil)
		if err != nil {
			t.Fatalf("cut %d: %v", cut, err)
		}
		if !strings.HasPrefix(plain.String(), string(out)) || len(out) != 128<<10*len(scan.torn.blocks) {
			t.Fatalf("cut %d: %d bytes from %d blocks, not a block-aligned prefix", cut, len(out), len(scan.torn.blocks))
		}
	}
}

// streamFrame compresses plain as a streaming encoder does: no declared
// content size, the given window.
func streamFrame(t *testing.T, plain []byte, window int) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc, err := zstd.NewWriter(&buf, zstd.WithWindowSize(window), zstd.WithEncoderConcurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := enc.Write(plain); err != nil {
		t.Fatal(err)
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Capped decoding: declared sizes over the limit fail before decoding,
// undeclared ones fail once the output outgrows the limit, and a large
// declared window alone (as DSH's header frames have) is no reason to fail.
func TestDecodeCapped(t *testing.T) {
	small := []byte(strings.Repeat("hello ", 20))
	wide := streamFrame(t, small, 8<<20)
	if scan, _ := scanFrames(wide); scan.frames[0].hasContent || scan.frames[0].window < 0 {
		t.Fatalf("test frame declares its size or has no window: %+v", scan.frames[0])
	}
	if out, err := decodeCapped(wide, 1<<20); err != nil || !bytes.Equal(out, small) {
		t.Fatalf("wide-window frame: %q, %v", out, err)
	}
	bomb := streamFrame(t, make([]byte, 3<<20), 1<<20)
	if _, err := decodeCapped(bomb, 1<<20); !errors.Is(err, errTooLarge) {
		t.Fatalf("undeclared 3 MiB: %v", err)
	}
	declared := frameOf(t, string(make([]byte, (1<<20)+1)))
	if _, err := decodeCapped(declared, 1<<20); !errors.Is(err, errTooLarge) {
		t.Fatalf("declared 1 MiB + 1: %v", err)
	}
	if out, err := decodeCapped(cat(frameOf(t, "ab"), wide), 1<<20); err != nil || string(out) != "ab"+string(small) {
		t.Fatalf("two frames: %q, %v", out, err)
	}
	for _, bad := range [][]byte{nil, wide[:len(wide)-1], []byte("not zstd")} {
		if _, err := decodeCapped(bad, 1<<20); err == nil {
			t.Fatalf("%q decoded", bad)
		}
	}
}
