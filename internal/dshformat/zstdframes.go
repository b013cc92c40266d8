package dshformat

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// A DSH zstd session log is a plain concatenation of standard Zstandard
// frames: one holding the header line, then one per durable append batch.
// Frame boundaries and a torn final frame are found by a structural scan
// that decompresses nothing (storage-formats §2.4).

var zstdMagic = [4]byte{0x28, 0xB5, 0x2F, 0xFD}

// Size limits (docs/dsh-compatibility.md, "Size limits"). DSH itself bounds
// neither a JSONL line nor a log; it writes frames of a few megabytes at
// most, and its SQLite codec caps a row's data at 1 MiB. The limits stop
// hostile input (a frame declaring a terabyte, a decompression bomb) from
// exhausting memory: a log is decoded into one buffer of at most
// maxLogText bytes, so a read holds little more than that.
const (
	// maxLineText bounds one decoded JSONL line (an event or a packed
	// row) and one SQLite row's decompressed data.
	maxLineText = 16 << 20
	// maxLogText bounds a whole session log's decoded text, and with it
	// every frame's and the window a frame may declare.
	maxLogText = 64 << 20
)

// frame is the structure of one Zstandard frame found by scanFrames.
type frame struct {
	start, end int // file offsets; end is just past the checksum
	descriptor byte
	window     int    // the window descriptor byte, -1 for a single-segment frame
	dictID     []byte // raw dictionary id bytes
	contentLen uint64 // declared content size; meaningful when hasContent
	hasContent bool
	// blocks are the offsets just past each complete block, in order.
	blocks []int
}

// frameScan is the result of a structural scan: the complete frames, and
// the offset where a torn final frame starts (-1 when the file ends on a
// frame boundary). torn describes the torn frame as far as it goes.
type frameScan struct {
	frames    []frame
	tornStart int
	torn      frame
}

// scanFrames walks the frames of b. It returns an error for bytes that
// cannot be the start of a frame or reserved values; running out of bytes
// inside a frame is not an error but a torn tail.
func scanFrames(b []byte) (frameScan, error) {
	s := frameScan{tornStart: -1}
	for off := 0; off < len(b); {
		f, complete, err := scanFrame(b, off)
		if err != nil {
			return s, err
		}
		if !complete {
			s.tornStart, s.torn = off, f
			return s, nil
		}
		s.frames = append(s.frames, f)
		off = f.end
	}
	return s, nil
}

// scanFrame scans the frame starting at off. complete is false when the
// input ends inside it; f then holds what was scanned.
func scanFrame(b []byte, off int) (f frame, complete bool, err error) {
	f = frame{start: off, window: -1}
	if len(b)-off < 4 {
		return f, false, nil
	}
	if [4]byte(b[off:off+4]) != zstdMagic {
		return f, false, fmt.Errorf("invalid frame magic at byte %d", off)
	}
	i := off + 4
	if i >= len(b) {
		return f, false, nil
	}
	d := b[i]
	f.descriptor = d
	if d&0x18 != 0 {
		return f, false, fmt.Errorf("reserved frame-header bit set in frame at byte %d", off)
	}
	singleSegment := d&0x20 != 0
	dictLen := [4]int{0, 1, 2, 4}[d&0x03]
	fcsLen := [4]int{0, 2, 4, 8}[d>>6]
	if d>>6 == 0 && singleSegment {
		fcsLen = 1
	}
	headerLen := 1 + dictLen + fcsLen
	if !singleSegment {
		headerLen++
	}
	if len(b)-i < headerLen {
		return f, false, nil
	}
	i++
	if !singleSegment {
		f.window = int(b[i])
		i++
	}
	f.dictID = b[i : i+dictLen]
	i += dictLen
	if fcsLen > 0 {
		f.hasContent = true
		fcs := b[i : i+fcsLen]
		switch fcsLen {
		case 1:
			f.contentLen = uint64(fcs[0])
		case 2:
			f.contentLen = uint64(binary.LittleEndian.Uint16(fcs)) + 256
		case 4:
			f.contentLen = uint64(binary.LittleEndian.Uint32(fcs))
		case 8:
			f.contentLen = binary.LittleEndian.Uint64(fcs)
		}
		i += fcsLen
	}
	for {
		if len(b)-i < 3 {
			return f, false, nil
		}
		h := uint32(b[i]) | uint32(b[i+1])<<8 | uint32(b[i+2])<<16
		last, typ, size := h&1 != 0, (h>>1)&3, int(h>>3)
		if typ == 3 {
			return f, false, fmt.Errorf("reserved block type in frame at byte %d", off)
		}
		if typ == 1 { // RLE: one byte repeated size times
			size = 1
		}
		if len(b)-i-3 < size {
			return f, false, nil
		}
		i += 3 + size
		f.blocks = append(f.blocks, i)
		if last {
			break
		}
	}
	if d&0x04 != 0 {
		if len(b)-i < 4 {
			return f, false, nil
		}
		i += 4
	}
	f.end = i
	return f, true, nil
}

// rebuildTornFrame turns the complete blocks of a torn frame into a frame
// the decoder accepts, so they can be decompressed: the same dictionary id,
// no content size, no checksum, an explicit window (a single-segment frame's
// window is its content size), and the last complete block marked last.
// It returns nil when there is nothing to recover. klauspost's decoder does
// not yield the complete blocks of a truncated frame by itself, which
// libzstd (DSH's decoder) does.
func rebuildTornFrame(b []byte, f frame) []byte {
	if len(f.blocks) == 0 {
		return nil
	}
	window := f.window
	if window < 0 {
		e := 0
		for e < 31 && uint64(1)<<(10+e) < f.contentLen {
			e++
		}
		window = e << 3
	}
	headerEnd := f.start + 5 + len(f.dictID)
	if f.window >= 0 {
		headerEnd++
	}
	if f.hasContent {
		headerEnd += [4]int{1, 2, 4, 8}[f.descriptor>>6]
	}
	lastEnd := f.blocks[len(f.blocks)-1]
	lastStart := headerEnd
	if len(f.blocks) > 1 {
		lastStart = f.blocks[len(f.blocks)-2]
	}
	out := make([]byte, 0, 6+len(f.dictID)+lastEnd-headerEnd)
	out = append(out, zstdMagic[:]...)
	out = append(out, f.descriptor&0x03, byte(window))
	out = append(out, f.dictID...)
	base := len(out) - headerEnd // file offset + base = offset in out
	out = append(out, b[headerEnd:lastEnd]...)
	out[lastStart+base] |= 1 // Last_Block bit of the last complete block
	return out
}

// decoderPool sizes the pool of block decoders that concurrent DecodeAll
// calls on a shared decoder draw from: 4, the cold-read concurrency of
// DSH's listing. A decoder made without a reader starts no goroutines.
const decoderPool = 4

// Decoders are shared: DecodeAll is safe for concurrent use.
var (
	logDecoder = sync.OnceValues(func() (*zstd.Decoder, error) {
		return zstd.NewReader(nil,
			zstd.WithDecoderConcurrency(decoderPool),
			zstd.WithDecoderMaxMemory(maxLogText),
			zstd.WithDecoderMaxWindow(maxLogText))
	})
	// cappedDecoder decodes into the caller's buffer and fails rather
	// than grow it.
	cappedDecoder = sync.OnceValues(func() (*zstd.Decoder, error) {
		return zstd.NewReader(nil,
			zstd.WithDecoderConcurrency(decoderPool),
			zstd.WithDecoderMaxMemory(maxLogText),
			zstd.WithDecoderMaxWindow(maxLogText),
			zstd.WithDecodeAllCapLimit(true))
	})
)

var errTooLarge = errors.New("decompressed data exceeds dsh's size limit")

// decodeFrame decompresses complete frames, verifying their checksums, and
// appends the output to dst.
func decodeFrame(dec *zstd.Decoder, b, dst []byte) ([]byte, error) {
	out, err := dec.DecodeAll(b, dst)
	if errors.Is(err, zstd.ErrDecoderSizeExceeded) || errors.Is(err, zstd.ErrWindowSizeExceeded) {
		return nil, fmt.Errorf("%w: %w", errTooLarge, err)
	}
	return out, err
}

// maxBlockText is the most one Zstandard block decodes to. A decoder
// checks sizes after each block, so a frame that lies about its size
// overruns its buffer by at most this much.
const maxBlockText = 128 << 10

// decodeFrameInto appends the decompressed frame f of the file b to text,
// refusing (errTooLarge) to let text grow past limit bytes and never
// allocating much beyond that. A declared content size is checked before
// any decoding, and the frame decoded into exactly that room (plus a
// block, so a lying frame fails before its buffer is reallocated); an
// undeclared one is streamed into text's spare room, which grows at most
// twice, the second time to the limit. On error the length of text is
// unchanged.
func decodeFrameInto(text, b []byte, f frame, limit int) ([]byte, error) {
	room := limit - len(text)
	if !f.hasContent {
		return streamFrameInto(text, b[f.start:f.end], f, limit)
	}
	if f.contentLen > uint64(room) {
		return text, fmt.Errorf("%w: frame at byte %d declares %d bytes, %d of the log's %d left", errTooLarge, f.start, f.contentLen, room, limit)
	}
	text = slices.Grow(text, int(f.contentLen)+2*maxBlockText)
	dec, err := logDecoder()
	if err != nil {
		return text, err
	}
	out, err := dec.DecodeAll(b[f.start:f.end], text)
	if err != nil {
		return text, err
	}
	return out, nil
}

// streamFrameInto decodes one frame without a declared content size.
// DecodeAll would grow its output by doubling (and overrun a capped buffer
// by a block before noticing), so the frame is streamed into text's spare
// room instead; the stream's window is capped at the line limit, more
// than any DSH or zstd level up to 19 writes.
func streamFrameInto(text, frame []byte, f frame, limit int) ([]byte, error) {
	// A reader that is not a bytes.Reader keeps the decoder from
	// switching to DecodeAll for small inputs.
	r, err := zstd.NewReader(struct{ io.Reader }{bytes.NewReader(frame)},
		zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderLowmem(true),
		zstd.WithDecoderMaxWindow(maxLineText),
		zstd.WithDecoderMaxMemory(uint64(limit)))
	if err != nil {
		return text, err
	}
	defer r.Close()
	n := len(text)
	for grown := 0; ; grown++ {
		got, err := io.ReadFull(r, text[len(text):min(cap(text), limit+1)])
		text = text[:len(text)+got]
		if len(text) > limit {
			return text[:n], fmt.Errorf("%w: frame at byte %d decodes to more than the %d bytes left of the log's %d", errTooLarge, f.start, limit-n, limit)
		}
		switch {
		case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
			return text, nil
		case errors.Is(err, zstd.ErrDecoderSizeExceeded) || errors.Is(err, zstd.ErrWindowSizeExceeded):
			return text[:n], fmt.Errorf("%w: %w", errTooLarge, err)
		case err != nil:
			return text[:n], err
		}
		size := limit + 1
		if grown == 0 {
			size = min(len(text)+1<<20, limit+1)
		}
		next := make([]byte, len(text), size)
		copy(next, text)
		text = next
	}
}

// decodeCapped decompresses a complete zstd payload (one or more frames)
// that may hold at most limit bytes, without ever allocating much more:
// frames that declare their content size are checked before decoding (and
// the decoder holds them to it); otherwise the output goes into a buffer
// of limit+1 bytes that the decoder may not outgrow. The window a frame
// declares is not held against it: DecodeAll keeps no separate window.
func decodeCapped(b []byte, limit int) ([]byte, error) {
	return decodeCappedInto(nil, b, limit)
}

// decodeCappedInto is decodeCapped into dst's room when it suffices.
func decodeCappedInto(dst, b []byte, limit int) ([]byte, error) {
	scan, err := scanFrames(b)
	if err != nil {
		return nil, err
	}
	if scan.tornStart >= 0 || len(scan.frames) == 0 {
		return nil, errors.New("truncated zstd data")
	}
	declared, known := uint64(0), true
	for _, f := range scan.frames {
		known = known && f.hasContent
		declared += f.contentLen
	}
	if known && declared > uint64(limit) {
		return nil, fmt.Errorf("%w: %d bytes declared, at most %d allowed", errTooLarge, declared, limit)
	}
	if known {
		dec, err := logDecoder()
		if err != nil {
			return nil, err
		}
		return decodeFrame(dec, b, dst[:0])
	}
	dec, err := cappedDecoder()
	if err != nil {
		return nil, err
	}
	// Most payloads are small (a header frame is one line, read once per
	// session of a corpus): try small buffers before paying for one of
	// the full limit.
	for size := min(limit, 4<<10); ; size = min(limit, size*16) {
		if cap(dst) < size+1 {
			dst = make([]byte, 0, size+1)
		}
		out, err := dec.DecodeAll(b, dst[:0:size+1])
		// Outgrowing the buffer surfaces as one of several decoder errors,
		// with the output decoded so far; having reached the buffer's size
		// tells them apart from damage.
		if len(out) < size || (err == nil && len(out) == size) {
			return out, err
		}
		if size == limit {
			return nil, fmt.Errorf("%w: more than %d bytes", errTooLarge, limit)
		}
	}
}
