package dshformat

import (
	"errors"

	"github.com/dsh-project/dsh/internal/jsjson"
)

// DSH's SQLite store keeps an event's sourceEventSeqs as a BLOB with no
// length prefix: the first seq as an unsigned LEB128 varint, then each
// difference to the previous seq ZigZag-encoded as an unsigned LEB128 varint
// (storage-formats §3.7). An empty BLOB is the empty list.

var (
	errTruncatedVarint    = errors.New("truncated varint")
	errNonCanonicalVarint = errors.New("non-canonical varint")
	errVarintRange        = errors.New("varint is out of range")
	errSeqRange           = errors.New("decoded seq is out of range")
)

// maxZigZag bounds a later value: the ZigZag form of any difference between
// two safe non-negative seqs.
const maxZigZag = 1<<54 - 2

// decodeSeqBlob decodes a source_event_seqs BLOB with every check DSH's
// reader applies: varints canonical and at most 9 bytes, the first value a
// safe integer, later encoded values at most 2^54-2, every decoded seq in
// [0, 2^53-1].
func decodeSeqBlob(b []byte) ([]int64, error) {
	seqs := make([]int64, 0, len(b))
	for len(b) > 0 {
		v, n, err := readVarint(b)
		if err != nil {
			return nil, err
		}
		b = b[n:]
		if len(seqs) == 0 {
			if v > jsjson.MaxSafeInteger {
				return nil, errVarintRange
			}
			seqs = append(seqs, int64(v))
			continue
		}
		if v > maxZigZag {
			return nil, errVarintRange
		}
		delta := int64(v >> 1)
		if v&1 != 0 {
			delta = -delta - 1
		}
		seq := seqs[len(seqs)-1] + delta
		if seq < 0 || seq > jsjson.MaxSafeInteger {
			return nil, errSeqRange
		}
		seqs = append(seqs, seq)
	}
	return seqs, nil
}

// readVarint reads one unsigned LEB128 varint of at most 9 bytes.
func readVarint(b []byte) (v uint64, n int, err error) {
	for shift := 0; ; shift += 7 {
		if shift > 56 {
			return 0, 0, errVarintRange
		}
		if n >= len(b) {
			return 0, 0, errTruncatedVarint
		}
		c := b[n]
		n++
		v |= uint64(c&0x7f) << shift
		if c&0x80 == 0 {
			if n > 1 && c == 0 {
				return 0, 0, errNonCanonicalVarint
			}
			return v, n, nil
		}
	}
}
