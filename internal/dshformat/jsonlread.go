package dshformat

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/boundedfile"
	"github.com/dsh-project/dsh/internal/jsjson"
	"github.com/dsh-project/dsh/internal/session"
)

// readJSONLFile reads one DSH JSONL session file (plain or zstd-framed)
// the way DSH's non-mutating inspect reads it: the header, the contiguous
// valid event prefix, and a torn tail if there is one. Damage DSH's inspect
// refuses is the error.
func readJSONLFile(ctx context.Context, path string, compressed bool) (*Session, error) {
	return refuseDamage(readJSONLFileAsFound(ctx, path, compressed))
}

// readJSONLFileAsFound is readJSONLFile with damage kept in Session.Damage.
func readJSONLFileAsFound(ctx context.Context, path string, compressed bool) (*Session, error) {
	data, err := readStable(ctx, path)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var s *Session
	if compressed {
		s, err = decodeZstdLogAsFound(ctx, path, data)
	} else {
		s, err = decodePlainLogAsFound(ctx, path, data)
	}
	if err != nil {
		return nil, err
	}
	if session.IsLaterFormat(s.Header.Version) && s.Header.IsSeeded() {
		// The cut of a later format is its last tagged end-seed marker. A
		// seeded log without one keeps a cut past its end, which
		// validation reports (session.RuleLineageMarker).
		cut, ok := session.LaterFormatCut(true, s.Events)
		if !ok {
			cut = int64(len(s.Events))
		}
		s.Header.SeedLength = &cut
	}
	return s, nil
}

// refuseDamage turns a damaged session into its error, as Read reports it.
func refuseDamage(s *Session, err error) (*Session, error) {
	if err != nil {
		return nil, err
	}
	if s.Damage != nil {
		return nil, s.Damage.Err
	}
	return s, nil
}

// readStable reads a whole file, retrying while it changes underneath (a
// live DSH may be appending), as DSH's stat/read/stat loop does. Only a
// regular file is read, and opening one never blocks (a FIFO swapped in
// for the log is refused, not waited on).
func readStable(ctx context.Context, path string) ([]byte, error) {
	const attempts = 5
	for range attempts {
		before, err := os.Stat(path)
		if err != nil {
			return nil, err
		}
		// A file larger than the log it may hold is refused unread: a
		// plain log is its text, and compression never grows a real one.
		if before.Size() > maxLogText {
			return nil, corruptAt(path, "", "session log exceeds dsh's size limit",
				fmt.Errorf("%w: file of %d bytes, at most %d allowed", errTooLarge, before.Size(), maxLogText))
		}
		data, err := boundedfile.Read(ctx, path, maxLogText)
		if errors.Is(err, boundedfile.ErrTooLarge) {
			return nil, corruptAt(path, "", "session log exceeds dsh's size limit", fmt.Errorf("%w: %w", errTooLarge, err))
		}
		if err != nil {
			return nil, err
		}
		after, err := os.Stat(path)
		if err != nil {
			return nil, err
		}
		if os.SameFile(before, after) && before.Size() == after.Size() && before.ModTime().Equal(after.ModTime()) && int64(len(data)) == after.Size() {
			return data, nil
		}
	}
	return nil, fmt.Errorf("%s: file kept changing while it was read", path)
}

func decodePlainLog(ctx context.Context, path string, text []byte) (*Session, error) {
	return refuseDamage(decodePlainLogAsFound(ctx, path, text))
}

func decodePlainLogAsFound(ctx context.Context, path string, text []byte) (*Session, error) {
	nl := bytes.IndexByte(text, '\n')
	if nl < 0 {
		return nil, corruptAt(path, "", "session log has no complete header line", errNotHeader)
	}
	h, err := headerAt(path, text[:nl])
	if err != nil {
		return nil, err
	}
	sc := lineScanner{ctx: ctx, path: path, id: h.ID, committed: nl + 1, budget: maxLogText, later: session.IsLaterFormat(h.Version)}
	err = sc.scan(text, nl+1)
	// A line over the size limit is damage kept as found: the file is
	// within the log limit, so its text is too.
	var ce *CorruptError
	if errors.Is(err, errTooLarge) && errors.As(err, &ce) {
		sc.damage, err = ce, errDamaged
	}
	if errors.Is(err, errDamaged) {
		return sc.damaged(h, text, RawJSONLText), nil
	}
	if err != nil {
		return nil, err
	}
	s := &Session{Header: h, Events: sc.events, Location: path, TextReplaced: sc.replaced.r}
	if sc.committed < len(text) {
		reason := "unterminated final record"
		if sc.issue != nil {
			reason = sc.issue.Msg
		}
		s.Torn = &Torn{FromSeq: int64(len(sc.events)), Marker: int64(sc.committed), Reason: reason, Raw: text[sc.committed:]}
	}
	return s, nil
}

// headerAt decodes a header line, adding the file to any error.
func headerAt(path string, line []byte) (session.Header, error) {
	h, _, err := decodeHeader(line)
	var refusal *UnsupportedVersionError
	switch {
	case errors.As(err, &refusal):
		refusal.Path = path
		return h, refusal
	case err != nil:
		return h, corruptAt(path, "", err.Error(), nil)
	}
	return h, nil
}

// logBufs holds the buffers zstd logs are decoded into (logBuf). Each
// has two blocks of headroom past the declared text (decodeFrameInto),
// 256 KiB that Go zeroes whenever one is allocated: for the few KiB of a
// typical log, allocating a buffer per log cost more than decoding it.
var logBufs sync.Pool

// maxPooledLogBuf bounds the buffers kept in logBufs.
const maxPooledLogBuf = 4 << 20

// logBuf is an empty buffer of at least size bytes' room.
func logBuf(size uint64) []byte {
	if b, ok := logBufs.Get().(*[]byte); ok && uint64(cap(*b)) >= size {
		return (*b)[:0]
	}
	return make([]byte, 0, size)
}

// putLogBuf keeps b for a later logBuf once nothing points into it.
func putLogBuf(b []byte) {
	if cap(b) > 0 && cap(b) <= maxPooledLogBuf {
		b = b[:0]
		logBufs.Put(&b)
	}
}

func decodeZstdLog(ctx context.Context, path string, data []byte) (*Session, error) {
	return refuseDamage(decodeZstdLogAsFound(ctx, path, data))
}

func decodeZstdLogAsFound(ctx context.Context, path string, data []byte) (*Session, error) {
	scan, scanErr := scanFrames(data)
	if len(scan.frames) == 0 {
		if scanErr != nil {
			return nil, corruptAt(path, "", "corrupt Zstandard session log", scanErr)
		}
		return nil, corruptAt(path, "", "empty or header-less Zstandard session log", nil)
	}
	frameFailed := func(f frame, err error) *CorruptError {
		msg := fmt.Sprintf("corrupt Zstandard session log: frame at byte %d failed validation", f.start)
		if errors.Is(err, errTooLarge) {
			msg = "session log exceeds dsh's size limit"
		}
		e := corruptAt(path, "", msg, err)
		e.Frame = int64(f.start)
		return e
	}
	// The whole log is decoded into one buffer: sized once from the
	// frames' declared content sizes when they fit the limit, so a log
	// that claims more costs nothing before it is refused.
	var declared uint64
	var over *frame // the first frame the declared sizes put over the limit
	for i, f := range scan.frames {
		declared += min(f.contentLen, maxLogText+1)
		if declared > maxLogText && over == nil {
			over = &scan.frames[i]
		}
	}
	size := uint64(0)
	if over == nil {
		size = declared + 2*maxBlockText
	}
	if over == nil && !scan.frames[0].hasContent && len(scan.frames) > 1 {
		// A header frame that does not declare its size (DSH streams it)
		// would take room the frames after it declare and make the
		// buffer grow: it is decoded alone first, the buffer sized after.
		size = 4 << 10
	}
	buf := logBuf(size)
	defer func() { putLogBuf(buf) }()
	text, err := decodeFrameInto(buf, data, scan.frames[0], maxLineText)
	if err != nil {
		return nil, frameFailed(scan.frames[0], err)
	}
	if len(text) == 0 || bytes.IndexByte(text, '\n') != len(text)-1 {
		e := corruptAt(path, "", "first frame is not exactly one header line", nil)
		e.Frame = 0
		return nil, e
	}
	h, err := headerAt(path, text[:len(text)-1])
	if err != nil {
		return nil, err
	}
	// Damage to the frames themselves keeps the header and every frame
	// after it as stored: DSH reads none of the log.
	framesDamaged := func(e *CorruptError) *Session {
		e.Session = h.ID
		return &Session{Header: h, Location: path, Damage: &Damage{
			Err: e, Raw: data[scan.frames[0].end:], Encoding: RawZstdFrames}}
	}
	if scanErr != nil {
		e := corruptAt(path, "", "corrupt Zstandard session log", scanErr)
		e.Frame = int64(len(data))
		if last := scan.frames[len(scan.frames)-1]; last.end < len(data) {
			e.Frame = int64(last.end)
		}
		return framesDamaged(e), nil
	}
	if over != nil {
		return framesDamaged(frameFailed(*over, fmt.Errorf("%w: the frames up to the one at byte %d declare more than %d bytes", errTooLarge, over.start, maxLogText))), nil
	}
	headerEnd := len(text)
	text = slices.Grow(text, int(declared-min(scan.frames[0].contentLen, maxLogText+1))+2*maxBlockText)
	// starts maps decoded text back to frames for error locations.
	starts := []frameStart{{text: 0, file: 0}}
	for _, f := range scan.frames[1:] {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		starts = append(starts, frameStart{text: len(text), file: f.start})
		// A log over the size limit is kept as found, as its frames: they
		// are small however much they decode to.
		if text, err = decodeFrameInto(text, data, f, maxLogText); err != nil {
			return framesDamaged(frameFailed(f, err)), nil
		}
	}
	// The events read out of text point into it: they get a copy of
	// exactly the text, and the buffer, headroom and all, serves the next
	// log read.
	buf, text = text[:0], bytes.Clone(text)
	sc := lineScanner{ctx: ctx, path: path, id: h.ID, committed: headerEnd, frames: starts, budget: maxLogText, later: session.IsLaterFormat(h.Version)}
	err = sc.scan(text, headerEnd)
	var ce *CorruptError
	if errors.Is(err, errTooLarge) && errors.As(err, &ce) {
		return framesDamaged(ce), nil
	}
	if errors.Is(err, errDamaged) {
		return sc.damaged(h, text, RawJSONLText), nil
	}
	if err != nil {
		return nil, err
	}
	if sc.committed != len(text) {
		e := sc.locate(sc.committed, "complete frame contains a torn JSONL record")
		if sc.issue != nil {
			e.Line, e.Err = sc.issue.Line, errors.New(sc.issue.Msg)
		}
		sc.damage = e
		return sc.damaged(h, text, RawJSONLText), nil
	}
	s := &Session{Header: h, Events: sc.events, Location: path, TextReplaced: sc.replaced.r}
	if scan.tornStart < 0 {
		return s, nil
	}
	complete := len(sc.events)
	// Salvage the complete blocks of the torn frame; a failure recovers
	// nothing, as DSH swallows errors of this attempt.
	if rebuilt := rebuildTornFrame(data, scan.torn); rebuilt != nil {
		from := len(text)
		// The accepted events' data point into text, so the salvaged
		// text is appended after it, never over it.
		if grown, err := decodeFrameInto(text, rebuilt, frame{start: 0, end: len(rebuilt)}, maxLogText); err == nil {
			text = grown
			sc.frames = append(sc.frames, frameStart{text: from, file: scan.tornStart})
			// A salvaged line over the line limit ends the salvage: it
			// joins the torn tail. Damage before a salvaged turn/end is
			// inside the committed region, as DSH's scanner of the
			// streamed blocks finds it: kept as found with every frame
			// as stored, the torn one's incomplete block included.
			err := sc.scan(text, from)
			switch {
			case errors.Is(err, errDamaged):
				return framesDamaged(sc.damage), nil
			case err != nil && !errors.Is(err, errTooLarge):
				return nil, err
			}
		}
	}
	s.Events, s.TextReplaced = sc.events, sc.replaced.r
	s.Torn = &Torn{
		FromSeq:   int64(len(sc.events)),
		Marker:    int64(scan.tornStart),
		Reason:    fmt.Sprintf("torn final Zstandard frame at byte %d", scan.tornStart),
		Raw:       data[scan.tornStart:],
		Recovered: len(sc.events) - complete,
	}
	return s, nil
}

type frameStart struct{ text, file int }

// lineScanner is DSH's streaming JSONL scanner (storage-formats §2.5). A
// line that cannot be decoded, or whose seq does not continue the log, is
// remembered as the first issue and tolerated as the start of a torn tail,
// unless a later line holds a turn/end: then the damage is inside the
// committed region and the issue becomes the error.
type lineScanner struct {
	ctx       context.Context
	path, id  string
	events    []session.Event
	committed int   // text offset just past the last accepted line
	line      int64 // event lines seen, 1-based as in DSH's messages
	issue     *CorruptError
	frames    []frameStart // zstd only
	// budget is what packed rows may still expand to (see rowLimits).
	budget int
	// later: the log is in a later format (2–4), where one line is one
	// event and no packed rows exist.
	later bool
	// damage is set when scan stopped with errDamaged: where the
	// committed region is damaged (its Offset is where the damaged line
	// starts in the text).
	damage *CorruptError
	// replaced counts the accepted events whose line was not UTF-8.
	replaced replacedText
}

// replacedText collects which accepted events were read from text that is
// not UTF-8 (backend.TextReplaced).
type replacedText struct{ r *backend.TextReplaced }

// note records that the events from seq first on, n of them, were read
// from replaced text.
func (t *replacedText) note(first int64, n int) {
	if n == 0 {
		return
	}
	if t.r == nil {
		t.r = &backend.TextReplaced{FirstSeq: first}
	}
	t.r.Events += n
}

// errDamaged stops a scan at damage inside the committed region; the
// scanner's damage field says where and why.
var errDamaged = errors.New("damaged committed region")

// damaged is the session a scan stopped by errDamaged yields: the events
// before the damaged line, and the text from that line on as found.
func (s *lineScanner) damaged(h session.Header, text []byte, enc RawEncoding) *Session {
	from := min(max(int(s.damage.Offset), 0), len(text))
	return &Session{Header: h, Events: s.events, Location: s.path, TextReplaced: s.replaced.r, Damage: &Damage{
		FromSeq: int64(len(s.events)), Err: s.damage, Raw: text[from:], Encoding: enc}}
}

func (s *lineScanner) locate(offset int, msg string) *CorruptError {
	e := corruptAt(s.path, s.id, msg, nil)
	e.Offset = int64(offset)
	if len(s.frames) > 0 {
		i := sort.Search(len(s.frames), func(i int) bool { return s.frames[i].text > offset }) - 1
		e.Frame = int64(s.frames[max(i, 0)].file)
	}
	return e
}

// scan processes every complete line of text from offset from on; a final
// fragment without "\n" is left unread.
func (s *lineScanner) scan(text []byte, from int) error {
	for pos := from; pos < len(text); {
		nl := bytes.IndexByte(text[pos:], '\n')
		if nl < 0 {
			return nil
		}
		line := text[pos : pos+nl]
		s.line++
		if len(line) > maxLineText {
			ce := s.locate(pos, "session log exceeds dsh's size limit")
			ce.Line, ce.Err = s.line, fmt.Errorf("%w: line of %d bytes, at most %d allowed", errTooLarge, len(line), maxLineText)
			return ce
		}
		if s.line%4096 == 0 {
			if err := s.ctx.Err(); err != nil {
				return err
			}
		}
		if err := s.accept(line, pos); err != nil {
			return err
		}
		pos += nl + 1
	}
	return nil
}

func (s *lineScanner) accept(line []byte, pos int) error {
	lim := jsonlRowLimits
	lim.maxBytes = s.budget
	rec, err := decodeRecord(line, lim, s.later)
	if errors.Is(err, errTooLarge) {
		ce := s.locate(pos, "session log exceeds dsh's size limit")
		ce.Line, ce.Err = s.line, err
		return ce
	}
	if err != nil {
		if s.issue == nil {
			s.issue = s.locate(pos, fmt.Sprintf("corrupt session log: unparsable committed event at line %d", s.line))
			s.issue.Line, s.issue.Err = s.line, err
		}
		return nil
	}
	if s.issue != nil {
		if rec.turnEnd {
			return s.committedDamage()
		}
		return nil
	}
	expected := int64(len(s.events))
	if got, ok := rec.firstSeq(expected); !ok {
		s.issue = s.locate(pos, fmt.Sprintf("corrupt session log: seq gap in committed region at line %d (expected %d, got %s)", s.line, expected, got))
		s.issue.Line = s.line
		if rec.turnEnd {
			return s.committedDamage()
		}
		return nil
	}
	if rec.rows != nil {
		s.events = append(s.events, rec.rows...)
		for _, e := range rec.rows {
			s.budget -= len(e.Data)
		}
	} else {
		e, err := eventFromMembers(rec.members, expected)
		if errors.Is(err, errRangeSeqs) && s.later {
			return &UnsupportedVersionError{Path: s.path, Session: s.id, Version: "2+",
				Detail: fmt.Sprintf("line %d: range-form sourceEventSeqs, which dsh has not verified against DSH's files", s.line)}
		}
		if err != nil {
			s.damage = s.locate(pos, "invalid event envelope")
			s.damage.Line, s.damage.Err = s.line, err
			return errDamaged
		}
		s.events = append(s.events, e)
	}
	// The line was decoded after Node's lenient UTF-8 decoding (see
	// decodeRecord): its events say so, not in silence.
	if !utf8.Valid(line) {
		s.replaced.note(expected, len(s.events)-int(expected))
	}
	s.committed = pos + len(line) + 1
	return nil
}

// committedDamage records a remembered issue followed by a turn/end: the
// damaged line was committed, so the log is corrupt.
func (s *lineScanner) committedDamage() error {
	e := *s.issue
	e.Msg += fmt.Sprintf(" (line %d holds a later turn/end, so the damage is inside the committed region)", s.line)
	s.damage = &e
	return errDamaged
}

// record is one decoded JSONL event line: an expanded packed row, or the
// members of a stored event object.
type record struct {
	rows    []session.Event
	members []jsjson.Member
	turnEnd bool
}

// decodeRecord parses a line as JSON (after Node's lenient UTF-8 decoding)
// and expands it if it is a packed row. Any line whose value is an object
// with a row tag as its type is a row (JSONL has no other discriminator).
// Lines that are not objects — null, numbers, arrays — are invalid lines.
func decodeRecord(line []byte, lim rowLimits, later bool) (record, error) {
	members, err := jsjson.ParseObject(jsjson.WellFormedUTF8(line))
	if err != nil {
		return record{}, err
	}
	t, _ := jsjson.LastMember(members, keyType)
	typ, _ := jsjson.StringValue(t.Value)
	if kind, ok := rowKindOf(typ); ok && !later {
		rows, err := decodeJSONLRow(kind, members, lim)
		if err != nil {
			return record{}, err
		}
		return record{rows: rows}, nil
	}
	return record{members: members, turnEnd: typ == session.TypeTurnEnd}, nil
}

// firstSeq checks that the record starts at seq expected; got renders the
// seq found the way DSH's message shows it.
func (r record) firstSeq(expected int64) (got string, ok bool) {
	if r.rows != nil {
		return strconv.FormatInt(r.rows[0].Seq, 10), r.rows[0].Seq == expected
	}
	m, present := jsjson.LastMember(r.members, keySeq)
	if !present {
		return "undefined", false
	}
	if f, isNum := jsjson.NumberValue(m.Value); isNum {
		return string(jsjson.AppendFloat(nil, f)), f == float64(expected)
	}
	if s, isStr := jsjson.StringValue(m.Value); isStr {
		return s, false
	}
	return string(m.Value), false
}

// readHeaderOnly reads just enough of a session file to decode its header,
// as DSH's listing does: the first line of a plain file, the first frame of
// a zstd file.
func readHeaderOnly(path string, compressed bool) (h session.Header, listable bool, err error) {
	f, _, err := boundedfile.Open(path)
	if err != nil {
		return h, false, err
	}
	defer f.Close()
	// The buffers are reused from session to session of a corpus: the
	// header decoded from them holds copies.
	sc := headerScratchPool.Get().(*headerScratch)
	defer headerScratchPool.Put(sc)
	const maxHeader = 1 << 20
	var line []byte
	if compressed {
		line, err = sc.firstFrameLine(f, maxHeader)
	} else {
		line, err = sc.firstLine(f, maxHeader)
	}
	if err != nil {
		return h, false, err
	}
	return decodeHeader(line)
}

// headerScratch is the buffers reading one header takes.
type headerScratch struct {
	in, out []byte
	br      *bufio.Reader
}

var headerScratchPool = sync.Pool{New: func() any { return &headerScratch{br: bufio.NewReaderSize(nil, 8<<10)} }}

func (sc *headerScratch) firstLine(r io.Reader, limit int) ([]byte, error) {
	br := sc.br
	br.Reset(r)
	defer br.Reset(nil)
	line := sc.in[:0]
	defer func() { sc.in = line[:0] }()
	for {
		chunk, err := br.ReadSlice('\n')
		line = append(line, chunk...)
		switch {
		case err == nil:
			return line[:len(line)-1], nil
		case errors.Is(err, bufio.ErrBufferFull) && len(line) <= limit:
			continue
		case errors.Is(err, bufio.ErrBufferFull):
			return nil, fmt.Errorf("header line longer than %d bytes", limit)
		case errors.Is(err, io.EOF):
			return nil, errors.New("session log has no complete header line")
		default:
			return nil, err
		}
	}
}

func (sc *headerScratch) firstFrameLine(r io.Reader, limit int) ([]byte, error) {
	// A header frame is a few hundred bytes: read it in small steps,
	// not a large block per session of a corpus.
	const step = 2 << 10
	buf := sc.in[:0]
	defer func() { sc.in = buf[:0] }()
	for {
		buf = slices.Grow(buf, step)
		n, readErr := io.ReadFull(r, buf[len(buf):len(buf)+step])
		buf = buf[:len(buf)+n]
		f, complete, err := scanFrame(buf, 0)
		if err != nil {
			return nil, err
		}
		if complete {
			text, err := decodeCappedInto(sc.out[:0], buf[:f.end], limit)
			if cap(text) <= 64<<10 {
				sc.out = text[:0]
			}
			if err != nil {
				return nil, fmt.Errorf("header frame failed validation: %w", err)
			}
			if len(text) == 0 || bytes.IndexByte(text, '\n') != len(text)-1 {
				return nil, errors.New("first frame is not exactly one header line")
			}
			return text[:len(text)-1], nil
		}
		if readErr != nil || len(buf) > limit {
			if len(buf) == 0 {
				return nil, errors.New("empty or header-less Zstandard session log")
			}
			return nil, errors.New("incomplete header frame")
		}
	}
}
