package dshformat

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/dsh-project/dsh/internal/dshfixtures"
	"github.com/dsh-project/dsh/internal/jsjson"
	"github.com/dsh-project/dsh/internal/session"
)

// Seed corpora live in testdata/fuzz/<target>; `go test` runs them as
// regular tests.

// FuzzJSONLLine feeds one event line through the JSONL scanner: it must
// never panic, and whatever it accepts must survive a write → read round
// trip unchanged, packed and unpacked.
func FuzzJSONLLine(f *testing.F) {
	f.Fuzz(func(t *testing.T, line []byte) {
		if bytes.IndexByte(line, '\n') >= 0 {
			return
		}
		content := []byte(testHeaderLine + "\n" + string(line) + "\n")
		s, err := decodePlainLog(context.Background(), "fuzz", content)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v is not a corruption", err)
			}
			return
		}
		if s.Torn != nil && len(s.Events) != 0 {
			t.Fatalf("a torn line left %d events", len(s.Events))
		}
		for _, pack := range []bool{true, false} {
			body, err := encodeBatch(s.Events, pack)
			if err != nil {
				t.Fatalf("accepted events do not encode: %v", err)
			}
			back, err := decodePlainLog(context.Background(), "fuzz", append([]byte(testHeaderLine+"\n"), body...))
			if err != nil || back.Torn != nil {
				t.Fatalf("re-read of %q: %v", body, err)
			}
			dshfixtures.AssertSameEvents(t, "round trip", back.Events, s.Events)
		}
	})
}

// FuzzPackedRow expands arbitrary row data under both codecs' limits: no
// panic; an accepted row has contiguous members within the limits, and
// its members pack back into a row that expands to the same events.
func FuzzPackedRow(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte, seq0, time0 int64) {
		seq0 &= jsjson.MaxSafeInteger
		time0 %= jsjson.MaxSafeInteger
		for kind := range rowTags {
			for _, lim := range []rowLimits{jsonlRowLimits, sqliteRowLimits} {
				lim.maxBytes = 64 << 20
				events, err := expandRow(rowKind(kind), seq0, time0, data, lim)
				if err != nil {
					continue
				}
				if len(events) < lim.minMembers || (lim.maxMembers > 0 && len(events) > lim.maxMembers) {
					t.Fatalf("%d members accepted under %s", len(events), lim)
				}
				run := make([]chunkDelta, len(events))
				for i, e := range events {
					if e.Seq != seq0+int64(i) {
						t.Fatalf("member %d has seq %d", i, e.Seq)
					}
					d, err := classifyChunk(e)
					if err != nil || (i > 0 && !continues(run[i-1], d)) {
						t.Fatalf("member %d (%s) does not pack back: %v", i, e.Data, err)
					}
					run[i] = d
				}
				again, err := expandRow(rowKind(kind), seq0, time0, appendRowData(nil, run), lim)
				if err != nil {
					t.Fatal(err)
				}
				dshfixtures.AssertSameEvents(t, "repacked row", again, events)
			}
		}
	})
}

// FuzzVarint decodes arbitrary provenance BLOBs: no panic, and since every
// accepted varint is canonical, re-encoding an accepted list gives back the
// exact bytes.
func FuzzVarint(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		seqs, err := decodeSeqBlob(b)
		if err != nil {
			return
		}
		for _, s := range seqs {
			if s < 0 || s > jsjson.MaxSafeInteger {
				t.Fatalf("decoded seq %d out of range", s)
			}
		}
		if again := encodeSeqBlob(seqs); !bytes.Equal(again, b) {
			t.Fatalf("%x decodes to %v, which encodes to %x", b, seqs, again)
		}
	})
}

// FuzzZstdScan reads arbitrary bytes as a zstd session log: no panic, the
// structural scan tiles the input, and the reader either fails with a
// corruption error or returns a contiguous prefix.
func FuzzZstdScan(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		scan, err := scanFrames(data)
		if err == nil {
			end := 0
			for _, fr := range scan.frames {
				if fr.start != end || fr.end <= fr.start {
					t.Fatalf("frames do not tile the input: %+v", scan.frames)
				}
				end = fr.end
			}
			if scan.tornStart >= 0 {
				if scan.tornStart != end {
					t.Fatalf("torn frame at %d after frames ending at %d", scan.tornStart, end)
				}
				rebuildTornFrame(data, scan.torn)
			} else if end != len(data) {
				t.Fatalf("frames end at %d of %d bytes", end, len(data))
			}
		}
		s, err := decodeZstdLog(context.Background(), "fuzz", data)
		if err != nil {
			var refusal *UnsupportedVersionError
			if !errors.Is(err, ErrCorrupt) && !errors.As(err, &refusal) {
				t.Fatalf("error %v is neither corruption nor refusal", err)
			}
			return
		}
		checkPrefix(t, s.Events)
	})
}

func checkPrefix(t *testing.T, events []session.Event) {
	t.Helper()
	for i, e := range events {
		if e.Seq != int64(i) {
			t.Fatalf("event %d has seq %d", i, e.Seq)
		}
	}
}
