package projcache

import (
	"bytes"
	"testing"

	"github.com/dsh-project/dsh/internal/jsjson"
)

// FuzzCheckpointDecode feeds arbitrary bytes to the checkpoint rows decoder,
// as a stored record's rows text: it must never panic, and rows it accepts
// must encode and decode back to the same rows, so a record dsh writes is a
// record it reads.
func FuzzCheckpointDecode(f *testing.F) {
	for _, seed := range []string{
		`{}`,
		`{"subagent":{"ver":1,"seq":4,"val":{"mode":"continuable","label":"l"}}}`,
		`{"subagent":{"ver":1,"seq":-1,"val":null},"other":{"ver":0,"seq":0,"val":[1,2.5,"x"],"junk":true}}`,
		`{"subagent":{"ver":1.5,"seq":0,"val":1}}`,
		`{"subagent":{"ver":1,"seq":9007199254740993,"val":1}}`,
		`{"subagent":{"ver":1,"seq":0}}`,
		`[]`,
		`null`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, text []byte) {
		cp, err := decodeRows(text)
		if err != nil {
			if cp != nil {
				t.Fatalf("an error %v returned rows %v", err, cp)
			}
			return
		}
		// A row under the empty key is read (and ignored: no unit has that
		// key) but never written.
		delete(cp, "")
		var watermark int64 = -1
		for _, row := range cp {
			watermark = max(watermark, row.Seq)
		}
		if _, err := jsjson.Compact(text); err != nil {
			return // values JSON.stringify would not write (dsh never stores them)
		}
		enc, err := encodeRows(cp, watermark)
		if err != nil {
			t.Fatalf("accepted rows %s do not encode: %v", text, err)
		}
		back, err := decodeRows(enc)
		if err != nil {
			t.Fatalf("encoded rows %s do not decode: %v", enc, err)
		}
		if len(back) != len(cp) {
			t.Fatalf("round trip has %d rows, want %d", len(back), len(cp))
		}
		for k, row := range cp {
			got, ok := back[k]
			if !ok || got.Ver != row.Ver || got.Seq != row.Seq {
				t.Fatalf("row %q: got %+v, want %+v", k, got, row)
			}
			want, _ := jsjson.Compact(row.Val)
			if !bytes.Equal(got.Val, want) {
				t.Fatalf("row %q value: got %s, want %s", k, got.Val, want)
			}
		}
	})
}
