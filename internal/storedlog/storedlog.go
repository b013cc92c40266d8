// Package storedlog holds the rules a session store applies to a log as it
// keeps it, whatever its SQL dialect: how an event is encoded into columns
// and decoded back, DSH's commit rule that tells a torn tail from
// corruption, and the validation replay that decides whether a log may be
// appended to. The stores (sqlitepersist, pgstore) run the queries; the
// verdicts come from here, so both backends reach the same ones.
package storedlog

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/jsjson"
	"github.com/dsh-project/dsh/internal/session"
)

// Row is one stored event row before it is decoded. The pointer columns are
// nil for SQL NULL (an absent key).
type Row struct {
	Seq  int64
	Type string
	Time int64
	// Data is the raw JSON text of the event's data.
	Data *string
	// SourceEventSeqs is a JSON array of integers.
	SourceEventSeqs *string
	// SurfaceOp is raw JSON ('"append"' or a replace object).
	SurfaceOp *string
	// Ignorable is 0 or 1 as stored; anything else is damage.
	Ignorable int64
	// UnknownKeys is a JSON array of envelope key names DSH does not define.
	UnknownKeys *string
}

// Encode returns e as the row a store writes.
func Encode(e session.Event) Row {
	r := Row{Seq: e.Seq, Type: e.Type, Time: e.Time}
	if e.Data != nil {
		s := string(e.Data)
		r.Data = &s
	}
	if e.HasSourceEventSeqs {
		b := []byte{'['}
		for i, s := range e.SourceEventSeqs {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsjson.AppendInt(b, s)
		}
		s := string(append(b, ']'))
		r.SourceEventSeqs = &s
	}
	if e.SurfaceOp != nil {
		s := string(e.SurfaceOp)
		r.SurfaceOp = &s
	}
	if e.Ignorable {
		r.Ignorable = 1
	}
	if len(e.UnknownKeys) > 0 {
		b := []byte{'['}
		for i, k := range e.UnknownKeys {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsjson.AppendString(b, k)
		}
		s := string(append(b, ']'))
		r.UnknownKeys = &s
	}
	return r
}

// Raw is what a torn tail keeps of this row: its data text as stored.
func (r *Row) Raw() []byte {
	if r.Data == nil {
		return []byte{}
	}
	return []byte(*r.Data)
}

// Decode turns the row into an event. It fails when a column holds
// something no write path produces: text that is not JSON where JSON is
// stored, an empty type, an out-of-range flag. (Whether the event is valid
// for DSH is the validator's question; this is whether it can be read.)
func (r *Row) Decode() (session.Event, error) {
	e := session.Event{Type: r.Type, Seq: r.Seq, Time: r.Time}
	if r.Type == "" {
		return e, errors.New("empty type")
	}
	if r.Data != nil {
		// One copy of the text serves the check and the event; the check
		// judges as encoding/json.Valid does, several times faster (it runs
		// once per event read).
		data := []byte(*r.Data)
		if !jsjson.Valid(data) {
			return e, errors.New("data is not valid JSON")
		}
		e.Data = data
	}
	if r.SourceEventSeqs != nil {
		seqs := []int64{}
		if err := json.Unmarshal([]byte(*r.SourceEventSeqs), &seqs); err != nil || seqs == nil {
			return e, fmt.Errorf("source_event_seqs %q is not a JSON array of integers", *r.SourceEventSeqs)
		}
		e.SourceEventSeqs = seqs
		e.HasSourceEventSeqs = true
	}
	if r.SurfaceOp != nil {
		op := []byte(*r.SurfaceOp)
		if !jsjson.Valid(op) {
			return e, errors.New("surface_op is not valid JSON")
		}
		e.SurfaceOp = op
	}
	switch r.Ignorable {
	case 0:
	case 1:
		e.Ignorable = true
	default:
		return e, fmt.Errorf("ignorable is %d, not 0 or 1", r.Ignorable)
	}
	if r.UnknownKeys != nil {
		if err := json.Unmarshal([]byte(*r.UnknownKeys), &e.UnknownKeys); err != nil || e.UnknownKeys == nil {
			return e, fmt.Errorf("unknown_keys %q is not a JSON array of strings", *r.UnknownKeys)
		}
	}
	return e, nil
}

// Decoded is one row after decoding: the event, or why it cannot be read.
type Decoded struct {
	Seq   int64
	Event session.Event
	Err   error
	// Raw is the stored data text, kept only for rows that failed to decode.
	Raw []byte
}

// DecodeRow decodes r for Split.
func DecodeRow(r *Row) Decoded {
	d := Decoded{Seq: r.Seq}
	d.Event, d.Err = r.Decode()
	if d.Err != nil {
		d.Raw = r.Raw()
	}
	return d
}

// ReadBack is what a store's scan of a session's rows returns for events an
// import just wrote with tail: the rows below the tail's start, in seq order,
// each decoded as a read decodes it. A store judges an imported log from it
// instead of reading back what it wrote (the stores write every event
// exactly as Encode encodes it).
func ReadBack(events []session.Event, tail *backend.TornTail) []Decoded {
	bySeq := func(a, b session.Event) int { return cmp.Compare(a.Seq, b.Seq) }
	if !slices.IsSortedFunc(events, bySeq) {
		events = slices.Clone(events)
		slices.SortFunc(events, bySeq)
	}
	out := make([]Decoded, 0, len(events))
	for _, e := range events {
		if tail != nil && e.Seq >= tail.FromSeq {
			break
		}
		out = append(out, readBackEvent(e))
	}
	return out
}

// readBackEvent is e encoded and decoded. An event with no array columns
// and the columns a read accepts decodes to itself, so it is checked
// rather than copied.
func readBackEvent(e session.Event) Decoded {
	plain := !e.HasSourceEventSeqs && e.SourceEventSeqs == nil && e.UnknownKeys == nil
	if plain && e.Type != "" && (e.Data == nil || jsjson.Valid(e.Data)) && (e.SurfaceOp == nil || jsjson.Valid(e.SurfaceOp)) {
		return Decoded{Seq: e.Seq, Event: e}
	}
	r := Encode(e)
	return DecodeRow(&r)
}

// StoredTail is tail as a store reads it back: Raw is never nil.
func StoredTail(tail *backend.TornTail) *backend.TornTail {
	if tail == nil {
		return nil
	}
	t := *tail
	if t.Raw == nil {
		t.Raw = []byte{}
	}
	return &t
}

// Split applies DSH's commit rule to a log's rows in seq order: a row that
// cannot be decoded, or whose seq breaks contiguity, starts a torn tail when
// no decodable turn/end follows it, and is corruption (an error wrapping
// backend.ErrCorrupt) otherwise. imported is the torn tail an import
// recorded (rows from its FromSeq on must already be left out); a cut found
// in the rows replaces it, being earlier.
func Split(id string, rows []Decoded, imported *backend.TornTail) ([]session.Event, *backend.TornTail, error) {
	torn := imported
	lastTurnEnd := -1
	for i := len(rows) - 1; i >= 0; i-- {
		if rows[i].Err == nil && rows[i].Event.Type == session.TypeTurnEnd {
			lastTurnEnd = i
			break
		}
	}
	events := make([]session.Event, 0, len(rows))
	for i, r := range rows {
		reason := ""
		switch {
		case r.Err != nil:
			reason = r.Err.Error()
		case r.Seq != int64(i):
			reason = fmt.Sprintf("seq %d is not contiguous; expected %d", r.Seq, i)
		}
		if reason == "" {
			events = append(events, r.Event)
			continue
		}
		if i <= lastTurnEnd {
			return nil, nil, CorruptRow(id, r.Seq, reason)
		}
		raw := r.Raw
		if r.Err == nil {
			raw = r.Event.Data
		}
		torn = &backend.TornTail{FromSeq: r.Seq, Reason: reason, Raw: raw}
		break
	}
	return events, torn, nil
}

// Replay validates a whole log the way DSH restores a session and returns
// the validator positioned after it.
func Replay(h session.Header, events []session.Event) (*session.Validator, error) {
	events, err := session.NormalizeLegacy(h.ID, events)
	if err != nil {
		return nil, err
	}
	v := session.NewValidator(h)
	err = session.ValidateHeader(h)
	for i := 0; err == nil && i < len(events); i++ {
		err = v.Add(events[i])
	}
	if err != nil {
		// A log with several problems reports the one DSH reports first.
		if first := session.ValidateLog(h, events); first != nil {
			return nil, first
		}
		return nil, err
	}
	return v, nil
}

// Repair decides what a repairing Load does to a log read back as events,
// cut at torn, with the stored verified flag: the log must pass Replay; its
// torn tail is dropped and the closers of an interrupted turn are appended
// (as DSH's repair does). It returns the Inspection the Load reports (Torn
// and Closers say what the repair did; Events followed by Closers is the
// repaired log) and the validator positioned after the repaired log, which
// the store records as verified. The validator is nil when the log needs no
// write: verified, nothing torn, no turn left open.
func Repair(h session.Header, events []session.Event, torn *backend.TornTail, verified bool) (*backend.Inspection, *session.Validator, error) {
	v, err := Replay(h, events)
	if err != nil {
		return nil, nil, FailedValidation(h.ID, err)
	}
	ins := &backend.Inspection{
		Header:   h,
		Events:   events,
		Torn:     torn,
		Closers:  session.InterruptedTurnClosers(events),
		Verified: true,
	}
	if torn == nil && len(ins.Closers) == 0 && verified {
		return ins, nil, nil
	}
	for _, c := range ins.Closers {
		if err := v.Add(c); err != nil {
			return nil, nil, dsherr.Wrap(dsherr.Internal, err, "closer for interrupted turn of session %q is invalid", h.ID)
		}
	}
	return ins, v, nil
}

// Imported judges a log an import wrote (n events), read back as stored
// and cut at torn: the result the import reports and, when the log can be
// recorded as verified, the validator positioned after it. The validator
// is nil for a torn or invalid log, whose store records only its next seq.
func Imported(h session.Header, n int, stored []session.Event, torn *backend.TornTail) (backend.ImportResult, *session.Validator) {
	res := backend.ImportResult{Events: n, Torn: torn}
	v, err := Replay(h, stored)
	if err != nil {
		res.Invalid = FailedValidation(h.ID, err)
		return res, nil
	}
	if torn != nil {
		return res, nil
	}
	res.Verified = true
	return res, v
}

// ValidateStored gives a stored log DSH's read-side treatment: older
// format-0 records are converted (storage is never rewritten), then the log
// is validated. A log recorded as verified with no torn tail was validated
// when dsh wrote it and no row has changed since (the stores' triggers clear
// the flag on any other change), so its verdict is known without validating
// it again. It returns the converted events.
func ValidateStored(h session.Header, events []session.Event, verified bool, torn *backend.TornTail) ([]session.Event, error) {
	events, err := session.NormalizeLegacy(h.ID, events)
	if err != nil {
		return nil, err
	}
	if verified && torn == nil {
		return events, nil
	}
	return events, session.ValidateLog(h, events)
}

// Inspect is the read-only verdict on a log read back as events, cut at
// torn, with the stored verified flag: ValidateStored's treatment, and the
// closers an interrupted turn would get.
func Inspect(h session.Header, events []session.Event, torn *backend.TornTail, verified bool) (*backend.Inspection, error) {
	events, err := ValidateStored(h, events, verified, torn)
	if err != nil {
		return nil, FailedValidation(h.ID, err)
	}
	return &backend.Inspection{
		Header:   h,
		Events:   events,
		Torn:     torn,
		Closers:  session.InterruptedTurnClosers(events),
		Verified: verified,
	}, nil
}

// Audit is the raw facts of a readable log beside the verdict Inspect
// gives, in the same order: a log that fails validation keeps its events
// as read and carries the failure as ReadErr. gaps are the holes in its
// stored seqs.
func Audit(h session.Header, events []session.Event, torn *backend.TornTail, verified bool, gaps []backend.SeqGap) *backend.AuditRead {
	a := &backend.AuditRead{Header: h, Events: events, Torn: torn, Verified: verified, Gaps: gaps}
	events, err := ValidateStored(h, events, verified, torn)
	if err != nil {
		a.ReadErr = FailedValidation(h.ID, err)
		return a
	}
	a.Events = events
	a.Closers = session.InterruptedTurnClosers(events)
	return a
}

// AuditRows is Audit for a log read whole (every stored row, in seq order)
// that has no torn tail or damage recorded by an import: the commit rule
// splits it, and the holes in its seqs are found in the rows, as a store
// finds them over the log's primary-key range (a verified log has none).
// ok is false when a row before the last turn/end is corrupt; the store's
// own Audit reports that log with its damaged prefix.
func AuditRows(h session.Header, rows []Decoded, verified bool) (a *backend.AuditRead, ok bool) {
	events, torn, err := Split(h.ID, rows, nil)
	if err != nil {
		return nil, false
	}
	var gaps []backend.SeqGap
	if !verified {
		prev := int64(-1)
		for _, r := range rows {
			if r.Seq > prev+1 {
				gaps = append(gaps, backend.SeqGap{From: prev + 1, To: r.Seq - 1})
			}
			prev = r.Seq
		}
	}
	return Audit(h, events, torn, verified, gaps), true
}

// Verified returns the events of rows read from a log recorded as
// verified, where any row that cannot be decoded means the store changed
// behind its triggers' back: corruption at that row.
func Verified(id string, rows []Decoded) ([]session.Event, error) {
	events := make([]session.Event, 0, len(rows))
	for _, r := range rows {
		if r.Err != nil {
			return nil, CorruptRow(id, r.Seq, r.Err.Error())
		}
		events = append(events, r.Event)
	}
	return events, nil
}

// CorruptRow is the error for a committed row that cannot be read.
func CorruptRow(id string, seq int64, reason string) error {
	c := &backend.CorruptRowError{ID: id, Seq: seq, Reason: reason}
	return &dsherr.Error{Code: dsherr.InvalidLog, Msg: c.Error(), Err: c}
}

// RecordedReadFailure is the error a read of session id gives when the
// write that stored its log recorded that it cannot be read; reason is the
// error that write found, as text.
func RecordedReadFailure(id, reason string) error {
	return &dsherr.Error{Code: dsherr.InvalidLog, Msg: reason, Err: errors.New(reason)}
}

// RecordedVerdict is what a store recorded beside session id's log about a
// cold read of it: the read failure when failed, else the registry fold;
// nil when it recorded neither (the log must be read to know).
func RecordedVerdict(id, failure string, failed bool, fold []byte) *backend.ColdVerdict {
	switch {
	case failed:
		return &backend.ColdVerdict{ReadErr: RecordedReadFailure(id, failure)}
	case fold != nil:
		return &backend.ColdVerdict{RegistryFold: fold}
	}
	return nil
}

// FailedValidation wraps a stored log's validation failure.
func FailedValidation(id string, err error) error {
	return fmt.Errorf("stored session %q failed validation: %w", id, err)
}

// StaleWriter is the error refusing an append that expected the log to end
// elsewhere.
func StaleWriter(id string, expected, stored int64) error {
	stale := &backend.StaleWriterError{ID: id, Expected: expected, Stored: stored}
	return &dsherr.Error{Code: dsherr.StaleWriter, Msg: stale.Error(), Err: stale}
}

// NotFound is the error for an unknown session id.
func NotFound(id string) error {
	return &dsherr.Error{Code: dsherr.NotFound, Msg: fmt.Sprintf("session %q not found", id), Err: backend.ErrNotFound}
}

// Duplicate is the error for creating a session whose id exists.
func Duplicate(id string) error {
	return &dsherr.Error{Code: dsherr.AlreadyExists, Msg: fmt.Sprintf("session %q already exists", id), Err: backend.ErrDuplicate}
}

// TornTailBlocksAppend refuses an append to a log that must be repaired
// (by a Load) first.
func TornTailBlocksAppend(id string, torn *backend.TornTail) error {
	return dsherr.New(dsherr.InvalidLog,
		"session %q has a torn tail from seq %d (%s); load it to repair before appending", id, torn.FromSeq, torn.Reason)
}

// DuplicateSeqs refuses an import whose events repeat a seq.
func DuplicateSeqs(id string, events []session.Event) error {
	seen := make(map[int64]bool, len(events))
	for _, e := range events {
		if seen[e.Seq] {
			return dsherr.New(dsherr.InvalidInput, "import session %q: seq %d appears more than once", id, e.Seq)
		}
		seen[e.Seq] = true
	}
	return nil
}

// CloserTypes are the event types an interrupted-turn closer can have.
var CloserTypes = []string{session.TypeToolResult, session.TypeStepEnd, session.TypeTurnEnd}

// FilterTypes keeps the events whose type is one of types.
func FilterTypes(events []session.Event, types []string) []session.Event {
	out := []session.Event{}
	for _, e := range events {
		for _, t := range types {
			if e.Type == t {
				out = append(out, e)
				break
			}
		}
	}
	return out
}

// Targets are the scan destinations of one event row, in the column order
// every backend selects (seq, type, time, data, source_event_seqs,
// surface_op, ignorable, unknown_keys); a NULL column scans into a nil
// pointer.
func (r *Row) Targets() []any {
	return []any{&r.Seq, &r.Type, &r.Time, &r.Data, &r.SourceEventSeqs, &r.SurfaceOp, &r.Ignorable, &r.UnknownKeys}
}

// Rows is the part of a result set DecodeAll needs; database/sql's
// *sql.Rows and pgx's Rows both have it, so the decoding loop is written
// once for both backends.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// DecodeAll scans and decodes every event row of rows; sizeHint is the
// expected row count, used only to preallocate. The caller closes rows.
func DecodeAll(rows Rows, sizeHint int64) ([]Decoded, error) {
	out := make([]Decoded, 0, max(sizeHint, 0))
	var r Row
	targets := r.Targets()
	for rows.Next() {
		r = Row{}
		if err := rows.Scan(targets...); err != nil {
			return nil, err
		}
		out = append(out, DecodeRow(&r))
	}
	return out, rows.Err()
}

// catalogIndexTypes are the event types the catalog index (migration 0008,
// events_catalog) covers, in its IN list's order.
var catalogIndexTypes = []string{"session/end-seed", "subagent/catalog", "subagent/descriptor"}

// CatalogIndexed reports whether every type of types is one the catalog
// index covers, so a typed read of them can be an index range.
func CatalogIndexed(types []string) bool {
	if len(types) == 0 {
		return false
	}
	for _, t := range types {
		if !slices.Contains(catalogIndexTypes, t) {
			return false
		}
	}
	return true
}

// CatalogIndexFilter is the catalog index's predicate on column, exactly as
// the migration writes it (SQLite uses a partial index only for a query
// repeating its WHERE term).
func CatalogIndexFilter(column string) string { return TypeList(column, catalogIndexTypes) }

// TypeList is "column IN ('t1', 't2', …)" with the types as SQL string
// literals (quotes doubled, valid for SQLite and PostgreSQL alike).
func TypeList(column string, types []string) string {
	quoted := make([]string, len(types))
	for i, t := range types {
		quoted[i] = "'" + strings.ReplaceAll(t, "'", "''") + "'"
	}
	return column + " IN (" + strings.Join(quoted, ", ") + ")"
}
