package dshformat

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"runtime"
	"strings"
	"testing"
)

// bombFrame builds, by hand, a Zstandard frame of a few kilobytes that
// decodes to lines lines of lineLen bytes each ("x…x\n"): RLE blocks of at
// most 128 KiB of 'x', each line closed by a one-byte RLE block of "\n".
// With declare set the frame states its content size, else it leaves it
// out (the decoder then learns the size only by decoding). No checksum.
func bombFrame(lines, lineLen int, declare bool) []byte {
	out := append([]byte(nil), zstdMagic[:]...)
	if declare {
		out = append(out, 0xC0, 0x58) // 8-byte content size, 2 MiB window
		out = binary.LittleEndian.AppendUint64(out, uint64(lines*(lineLen+1)))
	} else {
		out = append(out, 0x00, 0x58)
	}
	rle := func(b byte, n int, last bool) {
		h := uint32(n)<<3 | 1<<1
		if last {
			h |= 1
		}
		out = append(out, byte(h), byte(h>>8), byte(h>>16), b)
	}
	for i := range lines {
		for left := lineLen; left > 0; left -= 128 << 10 {
			rle('x', min(left, 128<<10), false)
		}
		rle('\n', 1, i == lines-1)
	}
	return out
}

// readBounded reads a zstd session log and reports how many bytes of heap
// the read allocated in all: an upper bound of its peak heap, exact however
// the garbage collector runs.
func readBounded(t *testing.T, content []byte) (*Session, uint64) {
	t.Helper()
	path := writeFile(t, t.TempDir(), "s/session.jsonl.zstd", content)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	s, err := readJSONLFileAsFound(context.Background(), path, true)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	return s, after.TotalAlloc - before.TotalAlloc
}

// A zstd bomb — a few kilobytes that decode to 256 MiB of lines, with or
// without a declared content size — is refused as over dsh's size limit
// with the session's header kept and its frames as found (small, not the
// decoded text), and reading it allocates little more than the log limit.
// A line over the line limit inside a log under the log limit is refused
// the same way.
func TestZstdBombBounded(t *testing.T) {
	header := frameOf(t, testHeaderLine+"\n")
	const slack = 24 << 20 // decoder tables, the file, the session
	for _, c := range []struct {
		name  string
		frame []byte
		// budget is the most the read may allocate.
		budget uint64
	}{
		{"undeclared 256 MiB of short lines", bombFrame(2048, 128<<10-1, false), maxLogText + slack},
		{"declared 256 MiB of short lines", bombFrame(2048, 128<<10-1, true), slack},
		{"one line over the line limit", bombFrame(1, maxLineText+1, false), maxLogText + slack},
	} {
		t.Run(c.name, func(t *testing.T) {
			content := cat(header, c.frame)
			if len(content) > 64<<10 {
				t.Fatalf("the bomb is %d bytes, not small", len(content))
			}
			s, allocated := readBounded(t, content)
			if s.Damage == nil {
				t.Fatalf("bomb read without damage: %d events, torn %+v", len(s.Events), s.Torn)
			}
			if !errors.Is(s.Damage.Err, errTooLarge) || !strings.Contains(s.Damage.Err.Error(), "exceeds dsh's size limit") {
				t.Fatalf("damage %v, want the size limit", s.Damage.Err)
			}
			if s.Header.ID != "s" || s.Damage.Encoding != RawZstdFrames || len(s.Damage.Raw) != len(c.frame) {
				t.Fatalf("kept header %q and %d raw bytes (%s), want the %d bytes of frames", s.Header.ID, len(s.Damage.Raw), s.Damage.Encoding, len(c.frame))
			}
			t.Logf("a %d-byte file; the read allocated %d MiB in all", len(content), allocated>>20)
			if allocated > c.budget {
				t.Fatalf("reading the bomb allocated %d MiB, want at most %d MiB", allocated>>20, c.budget>>20)
			}
		})
	}
}

// A file larger than the log limit is refused before it is read.
func TestOversizedLogFileRefusedUnread(t *testing.T) {
	path := writeFile(t, t.TempDir(), "s/session.jsonl", nil)
	if err := os.Truncate(path, maxLogText+1); err != nil {
		t.Fatal(err)
	}
	_, err := readJSONLFileAsFound(context.Background(), path, false)
	if ce := asCorrupt(t, err); !errors.Is(err, errTooLarge) || !strings.Contains(ce.Error(), "exceeds dsh's size limit") {
		t.Fatalf("error %v", err)
	}
}
