package projcache

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/jsjson"
	"github.com/dsh-project/dsh/internal/session"
)

// Cache reads and writes checkpoint records through a backend (or a
// transaction view of one, so a checkpoint is written in the same
// transaction as the events it covers). The backend stores records whole;
// what they mean is decided here.
type Cache struct {
	store backend.CheckpointReader
	reg   *Registry
}

// NewCache returns a cache over the records of store, read against the
// units registered in reg. Writes (Put, Delete, Clear, Rebuild) need a
// store that is also a backend.CheckpointWriter; on a read-only corpus
// they fail.
func NewCache(store backend.CheckpointReader, reg *Registry) *Cache {
	return &Cache{store: store, reg: reg}
}

// writer is the store's write side.
func (c *Cache) writer() (backend.CheckpointWriter, error) {
	w, ok := c.store.(backend.CheckpointWriter)
	if !ok {
		return nil, dsherr.New(dsherr.StoreUnavailable, "the checkpoint records of this corpus are read-only")
	}
	return w, nil
}

// Status is what a lookup found.
type Status int

// Lookup outcomes. Only a Hit carries rows; every other status is a miss to
// the caller, which then reads the log.
const (
	Miss     Status = iota // no record for the session
	Hit                    // a record of this lifecycle that decodes
	Foreign                // a record of another lifecycle (its witness differs)
	Poisoned               // a record that does not decode
)

func (s Status) String() string {
	switch s {
	case Miss:
		return "miss"
	case Hit:
		return "hit"
	case Foreign:
		return "foreign"
	case Poisoned:
		return "poisoned"
	}
	return fmt.Sprintf("Status(%d)", int(s))
}

// Lookup is one session's cached checkpoint as a reader may use it.
type Lookup struct {
	Status Status
	// Reason says why a Foreign or Poisoned record was refused.
	Reason string
	// AsOfSeq is the record's watermark (Hit only).
	AsOfSeq int64
	// Rows holds the usable rows: registered units at their registered
	// state version whose stored state renders a view.
	Rows Checkpoint
	// Values holds the views of Rows, by key.
	Values map[string]json.RawMessage
	// Dropped says, by key, why a stored row was not used.
	Dropped map[string]string
}

// record is one stored row of the table.
type record struct {
	id         string
	foldedFrom foldedFrom
	asOfSeq    int64
	rows       string
}

func recordOf(rec backend.CheckpointRecord) record {
	return record{id: rec.Witness.ID, foldedFrom: foldedFromOf(rec.Witness), asOfSeq: rec.AsOfSeq, rows: string(rec.Rows)}
}

// Lookup returns the checkpoint cached for h's session, checked against h.
func (c *Cache) Lookup(ctx context.Context, h session.Header) (Lookup, error) {
	r, found, err := c.record(ctx, h.ID)
	if err != nil || !found {
		return Lookup{Status: Miss}, err
	}
	return c.judge(r, h), nil
}

func (c *Cache) record(ctx context.Context, id string) (record, bool, error) {
	rec, found, err := c.store.Checkpoint(ctx, id)
	if err != nil || !found {
		return record{}, false, err
	}
	return recordOf(rec), true, nil
}

// LookupMany is Lookup for many sessions (typically one parent's children)
// in few queries: the records of a parent's children are read with one
// index range over the witness's parent (a record whose witness names
// another parent could only be Foreign, which a reader treats as a miss);
// the rest by id in one query. Every header's id is in the result; ids
// without a usable record are misses.
func (c *Cache) LookupMany(ctx context.Context, headers []session.Header) (map[string]Lookup, error) {
	out := make(map[string]Lookup, len(headers))
	byID := make(map[string]session.Header, len(headers))
	byParent := map[string]int{}
	for _, h := range headers {
		byID[h.ID] = h
		out[h.ID] = Lookup{Status: Miss}
		if p := h.Parent(); p != "" {
			byParent[p]++
		}
	}
	var rest []session.Header
	for _, h := range headers {
		if byParent[h.Parent()] < parentRangeMin {
			rest = append(rest, h)
		}
	}
	judge := func(r record) {
		if h, wanted := byID[r.id]; wanted {
			out[r.id] = c.judge(r, h)
		}
	}
	for parent, n := range byParent {
		if n < parentRangeMin {
			continue
		}
		if err := c.store.ChildCheckpoints(ctx, parent, eachRecord(judge)); err != nil {
			return nil, err
		}
	}
	if len(rest) == 0 {
		return out, nil
	}
	ids := make([]string, len(rest))
	for i, h := range rest {
		ids[i] = h.ID
	}
	if err := c.store.CheckpointsOf(ctx, ids, eachRecord(judge)); err != nil {
		return nil, err
	}
	return out, nil
}

// parentRangeMin is how many of one parent's children make reading that
// parent's whole range of records cheaper than looking each one up.
const parentRangeMin = 32

// eachRecord adapts fn to the backend's record callbacks.
func eachRecord(fn func(record)) func(backend.CheckpointRecord) error {
	return func(rec backend.CheckpointRecord) error {
		fn(recordOf(rec))
		return nil
	}
}

// judge applies the read rules to one record: witness, decoding, then per
// key the registered state version and the view.
func (c *Cache) judge(r record, h session.Header) Lookup {
	if field := r.foldedFrom.diff(foldedFromOf(h)); field != "" {
		return Lookup{Status: Foreign, Reason: fmt.Sprintf("witness field %s differs from the header", field)}
	}
	cp, err := decodeRows([]byte(r.rows))
	if err != nil {
		return Lookup{Status: Poisoned, Reason: err.Error()}
	}
	values, dropped := c.reg.ViewCheckpoint(cp)
	usable := make(Checkpoint, len(values))
	for key := range values {
		usable[key] = cp[key]
	}
	return Lookup{Status: Hit, AsOfSeq: r.asOfSeq, Rows: usable, Values: values, Dropped: dropped}
}

// Put replaces h's record with cp folded up to asOfSeq. The caller must only
// checkpoint events that are already durable in the log (the log leads);
// a row claiming a seq beyond asOfSeq, or holding a state that is not JSON,
// is refused and nothing is written.
func (c *Cache) Put(ctx context.Context, h session.Header, asOfSeq int64, cp Checkpoint) error {
	if asOfSeq < -1 {
		return fmt.Errorf("write checkpoint of %s: watermark %d below -1", h.ID, asOfSeq)
	}
	rows, err := encodeRows(cp, asOfSeq)
	if err != nil {
		return fmt.Errorf("write checkpoint of %s: %w", h.ID, err)
	}
	w, err := c.writer()
	if err != nil {
		return err
	}
	return w.PutCheckpoint(ctx, backend.CheckpointRecord{Witness: h, AsOfSeq: asOfSeq, Rows: rows})
}

// Delete removes id's record, if any.
func (c *Cache) Delete(ctx context.Context, id string) error {
	w, err := c.writer()
	if err != nil {
		return err
	}
	return w.DeleteCheckpoint(ctx, id)
}

// Clear removes every record and returns how many there were.
func (c *Cache) Clear(ctx context.Context) (int64, error) {
	w, err := c.writer()
	if err != nil {
		return 0, err
	}
	return w.ClearCheckpoints(ctx)
}

// IDs lists the sessions that have a record, sorted.
func (c *Cache) IDs(ctx context.Context) ([]string, error) {
	var ids []string
	err := c.store.EachCheckpoint(ctx, func(rec backend.CheckpointRecord) error {
		ids = append(ids, rec.Witness.ID)
		return nil
	})
	return ids, err
}

// encodeRows writes cp as {"<key>":{"ver":…,"seq":…,"val":…},…}, keys sorted
// so that equal checkpoints are equal bytes.
func encodeRows(cp Checkpoint, asOfSeq int64) ([]byte, error) {
	keys := make([]string, 0, len(cp))
	for k := range cp {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b := []byte{'{'}
	for i, k := range keys {
		row := cp[k]
		switch {
		case k == "":
			return nil, errors.New("row with an empty unit key")
		case row.Ver < 0:
			return nil, fmt.Errorf("row %q: negative state version %d", k, row.Ver)
		case row.Seq < -1 || row.Seq > asOfSeq:
			return nil, fmt.Errorf("row %q: seq %d outside -1..%d (the watermark)", k, row.Seq, asOfSeq)
		case !json.Valid(row.Val):
			return nil, fmt.Errorf("row %q: state is not JSON", k)
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = jsjson.AppendString(b, k)
		b = append(b, `:{"ver":`...)
		b = jsjson.AppendInt(b, int64(row.Ver))
		b = append(b, `,"seq":`...)
		b = jsjson.AppendInt(b, row.Seq)
		b = append(b, `,"val":`...)
		val, err := jsjson.Compact(row.Val)
		if err != nil {
			return nil, fmt.Errorf("row %q: %w", k, err)
		}
		b = append(b, val...)
		b = append(b, '}')
	}
	return append(b, '}'), nil
}

// decodeRows reads a stored rows text. Anything but an object of rows, each
// with an integer ver >= 0, an integer seq >= -1 and a val, is an error;
// unknown keys inside a row are ignored, as DSH strips them. Keys match
// exactly, as in JavaScript: a row map, not a struct, because encoding/json
// would match "VAL" or "Seq" to a struct field.
func decodeRows(text []byte) (Checkpoint, error) {
	if cp, ok := canonicalSingleRow(text); ok {
		return cp, nil
	}
	return decodeRowsGeneral(text)
}

// decodeRowsGeneral is decodeRows for any text: the strict general decoder.
func decodeRowsGeneral(text []byte) (Checkpoint, error) {
	var stored map[string]map[string]json.RawMessage
	if err := json.Unmarshal(text, &stored); err != nil {
		return nil, fmt.Errorf("rows do not decode: %w", err)
	}
	if stored == nil {
		return nil, errors.New("rows do not decode: not an object")
	}
	cp := make(Checkpoint, len(stored))
	for key, s := range stored {
		rawVer, rawSeq, val := s["ver"], s["seq"], s["val"]
		if rawVer == nil || rawSeq == nil || val == nil {
			return nil, fmt.Errorf("row %q lacks ver, seq or val", key)
		}
		ver, ok := safeInt(rawVer)
		if !ok || ver < 0 {
			return nil, fmt.Errorf("row %q: ver %s is not a non-negative integer", key, rawVer)
		}
		seq, ok := safeInt(rawSeq)
		if !ok || seq < -1 {
			return nil, fmt.Errorf("row %q: seq %s is not an integer >= -1", key, rawSeq)
		}
		cp[key] = Row{Ver: int(ver), Seq: seq, Val: val}
	}
	return cp, nil
}

// safeInt reads a JSON number that is an integer within JavaScript's safe
// range (a quoted number is not a number).
func safeInt(raw json.RawMessage) (int64, bool) {
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil || n > maxSafeInteger || n < -maxSafeInteger {
		return 0, false
	}
	return n, true
}

// maxSafeInteger is JavaScript's Number.MAX_SAFE_INTEGER.
const maxSafeInteger = 1<<53 - 1
