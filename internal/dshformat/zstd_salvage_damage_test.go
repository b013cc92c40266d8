package dshformat

import (
	"context"
	"errors"
	"testing"
)

// rawBlockFrame is a zstd frame of raw (stored) blocks with a 1 KiB window
// and no declared size: each block is its bytes as given, so a test
// controls exactly which lines sit in which block. cut bytes are taken off
// the end, tearing the last block.
func rawBlockFrame(blocks []string, cut int) []byte {
	out := append([]byte{}, zstdMagic[:]...)
	out = append(out, 0x00, 0x00) // no size, no checksum; window 1 KiB
	for i, b := range blocks {
		h := uint32(len(b)) << 3 // raw block
		if i == len(blocks)-1 {
			h |= 1
		}
		out = append(out, byte(h), byte(h>>8), byte(h>>16))
		out = append(out, b...)
	}
	return out[:len(out)-cut]
}

// salvagedDamageLog is a zstd log whose only event frame is torn: its
// complete first block holds an unparsable line followed by a committed
// turn/end, the damage DSH's scanner refuses inside the committed region.
func salvagedDamageLog(t testing.TB) []byte {
	header := frameOf(t, testHeaderLine+"\n")
	torn := rawBlockFrame([]string{
		turnStart(0) + "\n{not json}\n" + turnEnd(2) + "\n",
		turnStart(3) + "\n",
	}, 10)
	return cat(header, torn)
}

// Damage inside the blocks salvaged from a torn final frame is damage
// inside the committed region like any other (issue 23 item 1): the read
// keeps it as found — the header, and every byte after the header frame —
// and Read refuses with a corruption, never an unclassified error.
func TestZstdDamageInSalvagedTornFrame(t *testing.T) {
	data := salvagedDamageLog(t)
	path := writeFile(t, t.TempDir(), "s/session.jsonl.zstd", data)
	s, err := readJSONLFileAsFound(context.Background(), path, true)
	if err != nil {
		t.Fatalf("as found: %v", err)
	}
	if s.Damage == nil || s.Damage.Err == nil || s.Torn != nil {
		t.Fatalf("damage %+v torn %+v", s.Damage, s.Torn)
	}
	header := frameOf(t, testHeaderLine+"\n")
	if string(s.Damage.Raw) != string(data[len(header):]) || s.Damage.Encoding != RawZstdFrames {
		t.Fatalf("raw %q (%s), want every byte after the header frame", s.Damage.Raw, s.Damage.Encoding)
	}
	if s.Header.ID != "s" || s.Damage.Err.Session != "s" || s.Damage.Err.Line != 2 {
		t.Fatalf("header %q, damage %+v", s.Header.ID, s.Damage.Err)
	}
	_, err = readJSONLFile(context.Background(), path, true)
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("read: %v, want a corruption", err)
	}
}
