package dshformat

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/dsh-project/dsh/internal/jsjson"
	"github.com/dsh-project/dsh/internal/session"
)

// Packed chunk rows (storage-formats §1.7) are a physical vocabulary: a run
// of consecutive assistant/chunk delta events of one block stored as one
// record. Readers expand them back into the exact logical events.

const typeChunk = "assistant/chunk"

// rowKind is one of the three packed-row kinds.
type rowKind int

const (
	kindText rowKind = iota
	kindReasoning
	kindToolCall
)

var rowTags = [...]string{kindText: "text-chunks", kindReasoning: "reasoning-chunks", kindToolCall: "tool-call-chunks"}

var deltaTypes = [...]string{kindText: "text-delta", kindReasoning: "reasoning-delta", kindToolCall: "tool-call-delta"}

// rowKindOf returns the kind a storage-row tag names.
func rowKindOf(tag string) (rowKind, bool) {
	for k, t := range rowTags {
		if t == tag {
			return rowKind(k), true
		}
	}
	return 0, false
}

// rowLimits are the member-count bounds a reader accepts — the JSONL codec
// accepts any non-empty row, DSH's SQLite codec 3 … 1,024 members — and
// dsh's bound on the expanded events' data. Every member repeats the
// row's turn, step, index, id and name, so a small hostile row could
// otherwise expand into gigabytes.
type rowLimits struct {
	minMembers, maxMembers int // maxMembers 0 = unbounded
	maxBytes               int // 0 = no expansion allowed
}

var (
	jsonlRowLimits  = rowLimits{minMembers: 1}
	sqliteRowLimits = rowLimits{minMembers: sqliteMinRun, maxMembers: sqliteMaxRun}
)

const (
	minRun       = 3 // both DSH codecs pack runs of at least 3 deltas
	sqliteMinRun = minRun
	sqliteMaxRun = 1024
	// sqliteMaxRowBytes bounds the JSON text of a packed SQLite row's data.
	sqliteMaxRowBytes = 1 << 20
)

// rowError is DSH's "malformed <tag> storage row" error.
func rowError(kind rowKind, format string, args ...any) error {
	return fmt.Errorf("malformed %s storage row: %s", rowTags[kind], fmt.Sprintf(format, args...))
}

// decodeJSONLRow expands a JSONL line that is a packed row: the envelope
// must have exactly the keys type, seq0, time0 and data.
func decodeJSONLRow(kind rowKind, members []jsjson.Member, lim rowLimits) ([]session.Event, error) {
	env, err := exactKeys(members, "type", "seq0", "time0", "data")
	if err != nil {
		return nil, rowError(kind, "%v", err)
	}
	seq0, _, ok := jsjson.SafeInteger(env["seq0"].Value)
	if !ok || seq0 < 0 {
		return nil, rowError(kind, "seq0 is not a non-negative safe integer")
	}
	time0, _, ok := jsjson.SafeInteger(env["time0"].Value)
	if !ok {
		return nil, rowError(kind, "time0 is not a safe integer")
	}
	return expandRow(kind, seq0, time0, env["data"].Value, lim)
}

// exactKeys resolves duplicate keys (the last wins, as in JSON.parse) and
// checks that the key set is exactly the given one.
func exactKeys(members []jsjson.Member, keys ...string) (map[string]jsjson.Member, error) {
	byKey := make(map[string]jsjson.Member, len(keys))
	for _, m := range members {
		byKey[m.Key] = m
	}
	if len(byKey) != len(keys) {
		return nil, fmt.Errorf("has keys %s, expected %s", keyList(members), keyListOf(keys))
	}
	for _, k := range keys {
		if _, ok := byKey[k]; !ok {
			return nil, fmt.Errorf("has keys %s, expected %s", keyList(members), keyListOf(keys))
		}
	}
	return byKey, nil
}

func keyList(members []jsjson.Member) string {
	keys := make([]string, len(members))
	for i, m := range members {
		keys[i] = m.Key
	}
	return keyListOf(keys)
}

func keyListOf(keys []string) string {
	var b []byte
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, k...)
	}
	return string(append(b, '}'))
}

// expandRow validates a packed row's data object and expands it into its
// logical assistant/chunk events, member k at seq seq0+k and time
// time0+Σdt[0..k-1]. The events' data is built with the exact key order DSH
// uses, so they encode byte-identically to DSH's own expansion.
func expandRow(kind rowKind, seq0, time0 int64, data []byte, lim rowLimits) ([]session.Event, error) {
	members, err := jsjson.ParseObject(data)
	if err != nil {
		return nil, rowError(kind, "data: %v", err)
	}
	var f map[string]jsjson.Member
	payloadKey := "texts"
	switch {
	case kind != kindToolCall:
		f, err = exactKeys(members, "turn", "step", "index", "dt", "texts")
	case hasKey(members, "name"):
		payloadKey = "args"
		f, err = exactKeys(members, "turn", "step", "index", "dt", "id", "name", "args")
	default:
		payloadKey = "args"
		f, err = exactKeys(members, "turn", "step", "index", "dt", "id", "args")
	}
	if err != nil {
		return nil, rowError(kind, "data %v", err)
	}
	var turn, step, index []byte
	for _, n := range []struct {
		key string
		dst *[]byte
	}{{"turn", &turn}, {"step", &step}, {"index", &index}} {
		m := f[n.key]
		if !jsjson.IsNumber(m.Value) {
			return nil, rowError(kind, "%s is not a number", n.key)
		}
		*n.dst = jsjson.Canonical(m.Value, m.Canonical)
	}
	var id, name []byte
	if kind == kindToolCall {
		if id = f["id"].Value; !jsjson.IsString(id) {
			return nil, rowError(kind, "id is not a string")
		}
		id = jsjson.Canonical(id, f["id"].Canonical)
		if m, ok := f["name"]; ok {
			if !jsjson.IsString(m.Value) {
				return nil, rowError(kind, "name is not a string")
			}
			name = jsjson.Canonical(m.Value, m.Canonical)
		}
	}
	payload, ok := jsjson.ArrayElements(f[payloadKey].Value)
	if !ok {
		return nil, rowError(kind, "%s is not an array", payloadKey)
	}
	n := len(payload)
	if n < lim.minMembers || (lim.maxMembers > 0 && n > lim.maxMembers) {
		return nil, rowError(kind, "%d members, expected %s", n, lim)
	}
	dt, ok := jsjson.ArrayElements(f["dt"].Value)
	if !ok {
		return nil, rowError(kind, "dt is not an array")
	}
	if len(dt) != n-1 {
		return nil, rowError(kind, "dt has %d gaps for %d members", len(dt), n)
	}
	if seq0 > jsjson.MaxSafeInteger-int64(n-1) {
		return nil, rowError(kind, "last member seq exceeds the safe integer range")
	}
	times := make([]int64, n)
	times[0] = time0
	for k, g := range dt {
		gap, _, ok := jsjson.SafeInteger(g)
		if !ok {
			return nil, rowError(kind, "dt[%d] is not a safe integer", k)
		}
		t := times[k] + gap
		if t > jsjson.MaxSafeInteger || t < -jsjson.MaxSafeInteger {
			return nil, rowError(kind, "member %d time exceeds the safe integer range", k+1)
		}
		times[k+1] = t
	}
	// All members share one buffer: a row can hold thousands of tiny deltas.
	prefixLen := len(`{"turn":,"step":,"chunk":{"type":"","index":,"":}}`) + len(turn) + len(step) + len(index) + len(deltaTypes[kind]) + len("argumentsDelta")
	if kind == kindToolCall {
		prefixLen += len(`,"id":,"name":`) + len(id) + len(name)
	}
	size := n*prefixLen + len(f[payloadKey].Value)
	if size > lim.maxBytes {
		return nil, fmt.Errorf("%w: %s row at seq %d expands to about %d bytes of event data", errTooLarge, rowTags[kind], seq0, size)
	}
	buf := make([]byte, 0, size)
	events := make([]session.Event, n)
	for k, p := range payload {
		if !jsjson.IsString(p) {
			return nil, rowError(kind, "%s[%d] is not a string", payloadKey, k)
		}
		start := len(buf)
		buf = append(buf, `{"turn":`...)
		buf = append(buf, turn...)
		buf = append(buf, `,"step":`...)
		buf = append(buf, step...)
		buf = append(buf, `,"chunk":{"type":"`...)
		buf = append(buf, deltaTypes[kind]...)
		buf = append(buf, `","index":`...)
		buf = append(buf, index...)
		if kind == kindToolCall {
			buf = append(buf, `,"id":`...)
			buf = append(buf, id...)
			if name != nil {
				buf = append(buf, `,"name":`...)
				buf = append(buf, name...)
			}
			buf = append(buf, `,"argumentsDelta":`...)
		} else {
			buf = append(buf, `,"text":`...)
		}
		buf = jsjson.AppendStringLiteral(buf, p)
		buf = append(buf, "}}"...)
		events[k] = session.Event{Type: typeChunk, Seq: seq0 + int64(k), Time: times[k], Data: buf[start:len(buf):len(buf)]}
	}
	return events, nil
}

func (l rowLimits) String() string {
	if l.maxMembers == 0 {
		return fmt.Sprintf("at least %d", l.minMembers)
	}
	return fmt.Sprintf("%d to %d", l.minMembers, l.maxMembers)
}

func hasKey(members []jsjson.Member, key string) bool {
	_, ok := jsjson.LastMember(members, key)
	return ok
}

// chunkDelta is an assistant/chunk event that DSH's codec may pack: the
// parts a row stores once and the member's own payload, all as JSON text in
// JSON.stringify form.
type chunkDelta struct {
	kind               rowKind
	turn, step, index  []byte
	id, name           []byte // tool-call deltas; name nil when absent
	payload            []byte // the text or argumentsDelta string
	seq, time          int64
	turnF, stepF, idxF float64 // numeric values, compared as JavaScript compares
}

var errNotPackable = errors.New("event is not a packable chunk delta")

// classifyChunk decides whether DSH's codec packs e (§1.7 "classify"): an
// assistant/chunk with the envelope type, seq, time, data only; data
// {turn, step, chunk} with numeric turn and step; and a text, reasoning or
// tool-call delta chunk with exactly its keys. dsh additionally requires
// data to be in JSON.stringify form with keys in the order DSH's expansion
// writes them, so that packing and expanding gives back the same bytes.
func classifyChunk(e session.Event) (chunkDelta, error) {
	var d chunkDelta
	if e.Type != typeChunk || e.HasSourceEventSeqs || e.SurfaceOp != nil || e.Ignorable || len(e.UnknownKeys) > 0 {
		return d, errNotPackable
	}
	if e.Seq < 0 || e.Seq > jsjson.MaxSafeInteger || e.Time > jsjson.MaxSafeInteger || e.Time < -jsjson.MaxSafeInteger {
		return d, errNotPackable
	}
	if _, canonical, err := jsjson.ParseValue(e.Data); err != nil || !canonical {
		return d, errNotPackable
	}
	data, err := jsjson.ParseObject(e.Data)
	if err != nil || !keysInOrder(data, "turn", "step", "chunk") {
		return d, errNotPackable
	}
	var ok bool
	if d.turnF, ok = jsjson.NumberValue(data[0].Value); !ok {
		return d, errNotPackable
	}
	if d.stepF, ok = jsjson.NumberValue(data[1].Value); !ok {
		return d, errNotPackable
	}
	d.turn, d.step = data[0].Value, data[1].Value
	chunk, err := jsjson.ParseObject(data[2].Value)
	if err != nil || len(chunk) < 3 {
		return d, errNotPackable
	}
	switch jsjson.UnquoteIfString(chunk[0].Value) {
	case deltaTypes[kindText]:
		d.kind = kindText
	case deltaTypes[kindReasoning]:
		d.kind = kindReasoning
	case deltaTypes[kindToolCall]:
		d.kind = kindToolCall
	default:
		return d, errNotPackable
	}
	switch {
	case d.kind != kindToolCall && keysInOrder(chunk, "type", "index", "text"):
		d.payload = chunk[2].Value
	case d.kind == kindToolCall && keysInOrder(chunk, "type", "index", "id", "argumentsDelta"):
		d.id, d.payload = chunk[2].Value, chunk[3].Value
	case d.kind == kindToolCall && keysInOrder(chunk, "type", "index", "id", "name", "argumentsDelta"):
		d.id, d.name, d.payload = chunk[2].Value, chunk[3].Value, chunk[4].Value
		if !jsjson.IsString(d.name) {
			return d, errNotPackable
		}
	default:
		return d, errNotPackable
	}
	if d.idxF, ok = jsjson.NumberValue(chunk[1].Value); !ok || !jsjson.IsString(d.payload) || (d.kind == kindToolCall && !jsjson.IsString(d.id)) {
		return d, errNotPackable
	}
	d.index = chunk[1].Value
	d.seq, d.time = e.Seq, e.Time
	return d, nil
}

func keysInOrder(members []jsjson.Member, keys ...string) bool {
	if len(members) != len(keys) {
		return false
	}
	for i, k := range keys {
		if members[i].Key != k {
			return false
		}
	}
	return true
}

// continues reports whether next extends the run ending in prev: the next
// seq, a safe time gap, the same kind, turn, step and block index, and for
// tool calls the same call id and the same name (or no name).
func continues(prev, next chunkDelta) bool {
	gap := next.time - prev.time
	return next.kind == prev.kind && next.seq == prev.seq+1 &&
		gap <= jsjson.MaxSafeInteger && gap >= -jsjson.MaxSafeInteger &&
		next.turnF == prev.turnF && next.stepF == prev.stepF && next.idxF == prev.idxF &&
		bytes.Equal(next.id, prev.id) && (next.name == nil) == (prev.name == nil) && bytes.Equal(next.name, prev.name)
}

// appendRowData appends the data object of a packed row holding run.
func appendRowData(dst []byte, run []chunkDelta) []byte {
	first := run[0]
	dst = append(dst, `{"turn":`...)
	dst = append(dst, first.turn...)
	dst = append(dst, `,"step":`...)
	dst = append(dst, first.step...)
	dst = append(dst, `,"index":`...)
	dst = append(dst, first.index...)
	dst = append(dst, `,"dt":[`...)
	for k := 1; k < len(run); k++ {
		if k > 1 {
			dst = append(dst, ',')
		}
		dst = jsjson.AppendInt(dst, run[k].time-run[k-1].time)
	}
	dst = append(dst, ']')
	if first.kind == kindToolCall {
		dst = append(dst, `,"id":`...)
		dst = append(dst, first.id...)
		if first.name != nil {
			dst = append(dst, `,"name":`...)
			dst = append(dst, first.name...)
		}
		dst = append(dst, `,"args":[`...)
	} else {
		dst = append(dst, `,"texts":[`...)
	}
	for k, d := range run {
		if k > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, d.payload...)
	}
	return append(dst, "]}"...)
}

// appendJSONLRow appends the JSONL record of a packed row holding run.
func appendJSONLRow(dst []byte, run []chunkDelta) []byte {
	dst = append(dst, `{"type":"`...)
	dst = append(dst, rowTags[run[0].kind]...)
	dst = append(dst, `","seq0":`...)
	dst = jsjson.AppendInt(dst, run[0].seq)
	dst = append(dst, `,"time0":`...)
	dst = jsjson.AppendInt(dst, run[0].time)
	dst = append(dst, `,"data":`...)
	dst = appendRowData(dst, run)
	return append(dst, '}')
}

// packRuns walks events in order and hands every maximal run of packable,
// continuing chunk deltas of at least minRun members to row, and every other
// event to scalar.
func packRuns(events []session.Event, row func(run []chunkDelta) error, scalar func(e session.Event) error) error {
	var run []chunkDelta
	runStart := 0
	flush := func(end int) error {
		if len(run) >= minRun {
			if err := row(run); err != nil {
				return err
			}
		} else {
			for _, e := range events[runStart:end] {
				if err := scalar(e); err != nil {
					return err
				}
			}
		}
		run = run[:0]
		return nil
	}
	for i, e := range events {
		d, err := classifyChunk(e)
		if err == nil && len(run) > 0 && continues(run[len(run)-1], d) {
			run = append(run, d)
			continue
		}
		if err := flush(i); err != nil {
			return err
		}
		runStart = i
		if err == nil {
			run = append(run, d)
			continue
		}
		if err := scalar(e); err != nil {
			return err
		}
		runStart = i + 1
	}
	return flush(len(events))
}
