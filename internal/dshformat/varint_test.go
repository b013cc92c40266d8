package dshformat

import (
	"bytes"
	"errors"
	"slices"
	"testing"

	"github.com/dsh-project/dsh/internal/jsjson"
)

// DSH's provenance encoding, with the cases its tests pin (§3.7).
func TestSeqBlobPinnedCases(t *testing.T) {
	ff7 := bytes.Repeat([]byte{0xff}, 7)
	for _, c := range []struct {
		blob []byte
		seqs []int64
		err  error
	}{
		{[]byte{0x03, 0x04, 0x01, 0x0c}, []int64{3, 5, 4, 10}, nil},
		{[]byte{0xac, 0x02}, []int64{300}, nil},
		{[]byte{0x00}, []int64{0}, nil},
		{[]byte{}, []int64{}, nil},
		{append(append(append([]byte{0xfe}, bytes.Repeat([]byte{0xff}, 6)...), 0x0f, 0xfb), append(bytes.Repeat([]byte{0xff}, 6), 0x1f, 0xfa, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x1f)...),
			[]int64{jsjson.MaxSafeInteger - 1, 0, jsjson.MaxSafeInteger - 2}, nil},
		{[]byte{0x80}, nil, errTruncatedVarint},
		{[]byte{0x80, 0x00}, nil, errNonCanonicalVarint},
		{[]byte{0x00, 0x01}, nil, errSeqRange},
		{append(append(ff7, 0x0f), 0x02), nil, errSeqRange},
		{append(bytes.Repeat([]byte{0x80}, 7), 0x10), nil, errVarintRange},
		{bytes.Repeat([]byte{0x80}, 9), nil, errVarintRange},
	} {
		seqs, err := decodeSeqBlob(c.blob)
		if !errors.Is(err, c.err) || (c.err == nil && !slices.Equal(seqs, c.seqs)) {
			t.Errorf("%x: %v, %v; want %v, %v", c.blob, seqs, err, c.seqs, c.err)
		}
		if c.err == nil && !bytes.Equal(encodeSeqBlob(c.seqs), c.blob) {
			t.Errorf("%v encodes to %x, want %x", c.seqs, encodeSeqBlob(c.seqs), c.blob)
		}
	}
}
