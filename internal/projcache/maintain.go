package projcache

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/dsh-project/dsh/internal/jsjson"
	"github.com/dsh-project/dsh/internal/session"
)

// ErrSessionGone is what a ReadFunc or HeaderFunc returns (wrapped) when the
// session does not exist in the store. The cache does not import the store,
// so the caller translates the store's not-found error into this one.
var ErrSessionGone = errors.New("session is not in the store")

// ReadFunc reads a session's stored header and its valid event log.
type ReadFunc func(ctx context.Context, id string) (session.Header, []session.Event, error)

// HeaderFunc reads a session's stored header.
type HeaderFunc func(ctx context.Context, id string) (session.Header, error)

// Stats summarises the cache without reading any log.
type Stats struct {
	Records int
	// Units counts, per unit key and stored state version, the records
	// holding a row for that key (registered or not).
	Units map[string]map[int]int
	// Stale counts decodable records that lack a row for a registered unit
	// or hold one at another state version: a reader refolds those units.
	Stale int
	// Poisoned counts records whose rows do not decode.
	Poisoned int
	// Foreign counts records whose witness differs from the session's
	// stored header; Orphaned those whose session is gone. Both are zero
	// when Stats is given no HeaderFunc.
	Foreign  int
	Orphaned int
}

// Stats reads every record once. With a non-nil headerOf it also compares
// each record's witness with the session's stored header.
func (c *Cache) Stats(ctx context.Context, headerOf HeaderFunc) (Stats, error) {
	st := Stats{Units: map[string]map[int]int{}}
	var recs []record
	err := c.store.EachCheckpoint(ctx, eachRecord(func(r record) { recs = append(recs, r) }))
	if err != nil {
		return Stats{}, err
	}
	keys := c.reg.Keys()
	for _, r := range recs {
		st.Records++
		if cp, err := decodeRows([]byte(r.rows)); err != nil {
			st.Poisoned++
		} else {
			stale := false
			for key, row := range cp {
				if st.Units[key] == nil {
					st.Units[key] = map[int]int{}
				}
				st.Units[key][row.Ver]++
			}
			for _, key := range keys {
				ver, _ := c.reg.StateVersion(key)
				if row, ok := cp[key]; !ok || row.Ver != ver {
					stale = true
				}
			}
			if stale {
				st.Stale++
			}
		}
		if headerOf == nil {
			continue
		}
		h, err := headerOf(ctx, r.id)
		switch {
		case errors.Is(err, ErrSessionGone):
			st.Orphaned++
		case err != nil:
			return Stats{}, fmt.Errorf("read header of %s: %w", r.id, err)
		case r.foldedFrom.diff(foldedFromOf(h)) != "":
			st.Foreign++
		}
	}
	return st, nil
}

// FindingKind classifies what verify or rebuild found about one record.
type FindingKind string

// Finding kinds. Mismatch and Ahead are records that would serve wrong
// state; the others are records a reader already ignores (or a log that
// cannot be refolded), which rebuild replaces or removes.
const (
	KindMismatch   FindingKind = "mismatch"    // a row's state differs from a refold of the log at its seq
	KindAhead      FindingKind = "ahead"       // the record claims events the log does not have
	KindStale      FindingKind = "stale"       // a registered unit's row is missing or at another state version
	KindForeign    FindingKind = "foreign"     // the record belongs to another lifecycle
	KindPoisoned   FindingKind = "poisoned"    // the record does not decode
	KindOrphan     FindingKind = "orphan"      // the session is not in the store
	KindUnreadable FindingKind = "unreadable"  // the session's log cannot be read
	KindUnitFailed FindingKind = "unit-failed" // a unit fails on the log
	// KindFoldMismatch: the registry fold a store keeps beside the log
	// (backend.RegistryFoldRecorder) differs from a refold of the log.
	KindFoldMismatch FindingKind = "fold-mismatch"
)

// Finding is one problem with one record. Key names the unit row concerned,
// "" for the whole record.
type Finding struct {
	SessionID string
	Key       string
	Kind      FindingKind
	Reason    string
}

func (f Finding) String() string {
	if f.Key == "" {
		return fmt.Sprintf("%s: %s: %s", f.SessionID, f.Kind, f.Reason)
	}
	return fmt.Sprintf("%s: %s %s: %s", f.SessionID, f.Key, f.Kind, f.Reason)
}

// VerifyReport is the outcome of Verify.
type VerifyReport struct {
	// Checked counts the records compared with their logs.
	Checked int
	// Events counts the events of the logs read to check them (a record
	// whose log cannot be read adds none).
	Events int
	// NoRecord lists requested ids that have no record (nothing to check).
	NoRecord []string
	// Findings lists every disagreement, in id order.
	Findings []Finding
}

// Verify refolds each record's session from its log and reports every record
// that disagrees, without writing anything. ids nil means every record. A
// record that lags the log is not a finding: rows are compared with a refold
// of the log up to each row's own seq.
func (c *Cache) Verify(ctx context.Context, read ReadFunc, ids []string) (VerifyReport, error) {
	return c.VerifyProgress(ctx, read, ids, nil)
}

// VerifyProgress is Verify reporting, before each target and at the end,
// how many of how many targets are done (progress may be nil).
func (c *Cache) VerifyProgress(ctx context.Context, read ReadFunc, ids []string, progress func(done, total int)) (VerifyReport, error) {
	var rep VerifyReport
	ids, err := c.targets(ctx, ids)
	if err != nil {
		return rep, err
	}
	for i, id := range ids {
		if progress != nil {
			progress(i, len(ids))
		}
		r, found, err := c.record(ctx, id)
		if err != nil {
			return rep, err
		}
		if !found {
			rep.NoRecord = append(rep.NoRecord, id)
			continue
		}
		findings, events, err := c.verifyRecord(ctx, read, r)
		if err != nil {
			return rep, err
		}
		rep.Checked++
		rep.Events += events
		rep.Findings = append(rep.Findings, findings...)
	}
	if progress != nil {
		progress(len(ids), len(ids))
	}
	return rep, nil
}

// verifyRecord checks one record against its log: the findings and the
// number of events read.
func (c *Cache) verifyRecord(ctx context.Context, read ReadFunc, r record) ([]Finding, int, error) {
	h, events, err := read(ctx, r.id)
	if err != nil && ctx.Err() != nil {
		return nil, 0, ctx.Err()
	}
	findings, n := c.checkLog(r, LogRead{Header: h, Events: events, Err: err})
	return findings, n, nil
}

// LogRead is one session's log as a ReadFunc reads it: its header and
// events, or the error.
type LogRead struct {
	Header session.Header
	Events []session.Event
	Err    error
}

// Records are the checkpoint records of some sessions, read in one query
// (RecordsOf), for checking them against logs read in a batch (CheckLog).
type Records struct{ byID map[string]record }

// RecordsOf reads the records of ids in one query.
func (c *Cache) RecordsOf(ctx context.Context, ids []string) (Records, error) {
	recs := Records{byID: make(map[string]record, len(ids))}
	err := c.store.CheckpointsOf(ctx, ids, eachRecord(func(r record) { recs.byID[r.id] = r }))
	return recs, err
}

// Has reports whether id has a record.
func (r Records) Has(id string) bool {
	_, ok := r.byID[id]
	return ok
}

// CheckLog is Verify's check of id's record (which recs must hold) against
// its log as read: the findings and the number of events refolded. It
// reads nothing, so the logs of a batch can be checked on several
// goroutines at once.
func (c *Cache) CheckLog(recs Records, id string, log LogRead) ([]Finding, int) {
	return c.checkLog(recs.byID[id], log)
}

func (c *Cache) checkLog(r record, log LogRead) ([]Finding, int) {
	if err := log.Err; err != nil {
		kind, reason := KindUnreadable, fmt.Sprintf("log cannot be read: %v", err)
		if errors.Is(err, ErrSessionGone) {
			kind, reason = KindOrphan, err.Error()
		}
		return []Finding{{SessionID: r.id, Kind: kind, Reason: reason}}, 0
	}
	return c.compareRecord(r, log.Header, log.Events), len(log.Events)
}

// compareRecord compares record r with a refold of its session's header h
// and log.
func (c *Cache) compareRecord(r record, h session.Header, events []session.Event) []Finding {
	finding := func(key string, kind FindingKind, format string, args ...any) []Finding {
		return []Finding{{SessionID: r.id, Key: key, Kind: kind, Reason: fmt.Sprintf(format, args...)}}
	}
	if field := r.foldedFrom.diff(foldedFromOf(h)); field != "" {
		return finding("", KindForeign, "witness field %s differs from the stored header", field)
	}
	cp, err := decodeRows([]byte(r.rows))
	if err != nil {
		return finding("", KindPoisoned, "%v", err)
	}
	lastSeq := int64(-1)
	if len(events) > 0 {
		lastSeq = events[len(events)-1].Seq
	}
	if r.asOfSeq > lastSeq {
		return finding("", KindAhead, "watermark %d is beyond the log's last seq %d", r.asOfSeq, lastSeq)
	}
	var out []Finding
	// The seqs at which some usable row must be compared with a refold.
	var cuts []int64
	for _, key := range c.reg.Keys() {
		ver, _ := c.reg.StateVersion(key)
		row, ok := cp[key]
		switch {
		case !ok:
			out = append(out, finding(key, KindStale, "no row for this registered unit")...)
		case row.Ver != ver:
			out = append(out, finding(key, KindStale, "state version %d, registered %d", row.Ver, ver)...)
		case row.Seq > lastSeq:
			out = append(out, finding(key, KindAhead, "row seq %d is beyond the log's last seq %d", row.Seq, lastSeq)...)
		default:
			if !slices.Contains(cuts, row.Seq) {
				cuts = append(cuts, row.Seq)
			}
		}
	}
	slices.Sort(cuts)
	fold := c.reg.NewFold()
	next := 0
	for _, cut := range cuts {
		for next < len(events) && events[next].Seq <= cut {
			fold.Apply(events[next])
			next++
		}
		refold, foldErr := fold.Checkpoint()
		for _, key := range c.reg.Keys() {
			row, ok := cp[key]
			if !ok || row.Seq != cut {
				continue
			}
			ver, _ := c.reg.StateVersion(key)
			if row.Ver != ver {
				continue
			}
			want, ok := refold[key]
			if !ok {
				out = append(out, finding(key, KindUnitFailed, "refold fails at seq %d: %s", cut, failureOf(foldErr, key))...)
				continue
			}
			if !sameJSON(row.Val, want.Val) {
				out = append(out, finding(key, KindMismatch, "state at seq %d differs from a refold of the log", cut)...)
			}
		}
	}
	return out
}

// failureOf describes key's failure in a fold error (failures are joined,
// one *UnitError per failed unit).
func failureOf(err error, key string) string {
	var joined interface{ Unwrap() []error }
	if errors.As(err, &joined) {
		for _, e := range joined.Unwrap() {
			var ue *UnitError
			if errors.As(e, &ue) && ue.Key == key {
				return ue.Err.Error()
			}
		}
	}
	return "the unit fails on the log"
}

// sameJSON compares two JSON texts as JSON.stringify would print them.
func sameJSON(a, b []byte) bool {
	ca, errA := jsjson.Compact(a)
	cb, errB := jsjson.Compact(b)
	return errA == nil && errB == nil && string(ca) == string(cb)
}

// RebuildReport is the outcome of Rebuild.
type RebuildReport struct {
	// Rewritten counts records written from a full refold.
	Rewritten int
	// Removed lists records deleted because their session is gone or its
	// log cannot be read (a record nobody can vouch for is not kept).
	Removed []Finding
	// UnitFailures lists units that fail on a log; the rewritten record
	// holds every other unit's row.
	UnitFailures []Finding
}

// Rebuild refolds each session from its full log and replaces its record.
// ids nil means every existing record; pass the store's ids to populate the
// cache for every session. Each session is one statement (a replace or a
// delete), so an interrupted rebuild leaves every record either old or new.
// progress, when non-nil, is called after each session.
func (c *Cache) Rebuild(ctx context.Context, read ReadFunc, ids []string, progress func(done, total int)) (RebuildReport, error) {
	var rep RebuildReport
	ids, err := c.targets(ctx, ids)
	if err != nil {
		return rep, err
	}
	for i, id := range ids {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		if _, err := c.RebuildOne(ctx, read, id, &rep); err != nil {
			return rep, err
		}
		if progress != nil {
			progress(i+1, len(ids))
		}
	}
	return rep, nil
}

// RebuildOne is Rebuild for one session, adding what it did to rep; it
// returns the fold of the log it read when it rewrote the record (nil when
// the record was removed).
func (c *Cache) RebuildOne(ctx context.Context, read ReadFunc, id string, rep *RebuildReport) (*Fold, error) {
	h, events, err := read(ctx, id)
	if err != nil && ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return c.RebuildFolded(ctx, id, c.FoldLog(LogRead{Header: h, Events: events, Err: err}), rep)
}

// Refold is a log folded whole for a rebuild: its header and fold, or the
// error its read gave.
type Refold struct {
	Header session.Header
	Fold   *Fold
	Err    error
}

// FoldLog folds log whole for RebuildFolded. It reads and writes nothing,
// so the logs of a batch can be folded on several goroutines as they are
// read, and only their folds held until they are written.
func (c *Cache) FoldLog(log LogRead) Refold {
	if log.Err != nil {
		return Refold{Err: log.Err}
	}
	fold := c.reg.NewFold()
	fold.Apply(log.Events...)
	return Refold{Header: log.Header, Fold: fold}
}

// RebuildFolded is RebuildOne for a log FoldLog folded: it replaces id's
// record with the fold, or removes the record when the log could not be
// read.
func (c *Cache) RebuildFolded(ctx context.Context, id string, r Refold, rep *RebuildReport) (*Fold, error) {
	if err := r.Err; err != nil {
		kind, reason := KindUnreadable, fmt.Sprintf("log cannot be read: %v", err)
		if errors.Is(err, ErrSessionGone) {
			kind, reason = KindOrphan, err.Error()
		}
		if err := c.Delete(ctx, id); err != nil {
			return nil, err
		}
		rep.Removed = append(rep.Removed, Finding{SessionID: id, Kind: kind, Reason: reason})
		return nil, nil
	}
	cp, foldErr := r.Fold.Checkpoint()
	for _, key := range c.reg.Keys() {
		if _, ok := cp[key]; ok {
			continue
		}
		rep.UnitFailures = append(rep.UnitFailures, Finding{SessionID: id, Key: key, Kind: KindUnitFailed, Reason: failureOf(foldErr, key)})
	}
	if err := c.Put(ctx, r.Header, r.Fold.AsOfSeq(), cp); err != nil {
		return nil, err
	}
	rep.Rewritten++
	return r.Fold, nil
}

// targets returns ids, or every record's id when ids is nil.
func (c *Cache) targets(ctx context.Context, ids []string) ([]string, error) {
	if ids != nil {
		return ids, nil
	}
	return c.IDs(ctx)
}
