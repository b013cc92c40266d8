// Package projcache is dsh's projection checkpoint cache and the projection
// registry it caches (DSH's own cache file, session_projcache.json, is read by
// dshformat.ReadCache; the two are different formats with different rules).
//
// A projection unit folds a session's event log into a small state and
// renders a view of it (DSH's ProjectionDefinition). The registry folds every
// registered unit over a log; the cache keeps one checkpoint record per
// session in the backend (backend.CheckpointReader/Writer) so that a listing
// can serve a child's identity without reading its log. The log leads and the cache follows: a checkpoint
// never claims events that are not durable, and a record that does not match
// the session's lifecycle, a unit's state version, or does not decode is
// ignored, never trusted.
package projcache

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/dsh-project/dsh/internal/session"
)

// Unit is one projection. A state is its own JSON text: a checkpoint stores
// it verbatim, and a cached state needs no separate encoding step. Apply must
// return the state unchanged for an event the unit ignores and must not keep
// the event after it returns; a unit that reads only some event types should
// look at Event.Type before touching Event.Data, so that a fold over a long
// log stays cheap.
type Unit interface {
	// Key names the unit in snapshots and checkpoint rows.
	Key() string
	// StateVersion changes whenever the state's shape or the fold's meaning
	// changes; checkpoint rows at another version are discarded, never
	// migrated.
	StateVersion() int
	Init() json.RawMessage
	Apply(state json.RawMessage, e session.Event) (json.RawMessage, error)
	View(state json.RawMessage) (json.RawMessage, error)
}

// EventTyped is implemented by a unit whose fold reads only some event types.
// When every registered unit implements it, a reader may load just those
// events (see Registry.EventTypes).
type EventTyped interface {
	EventTypes() []string
}

// UnitError is a unit's failure on one log: an error it returned, a panic
// inside it, or a state or view that is not JSON. Callers turn it into a
// `corrupt` row for that session; it never stops anything else.
type UnitError struct {
	Key string
	Err error
}

func (e *UnitError) Error() string { return fmt.Sprintf("projection unit %q: %v", e.Key, e.Err) }

func (e *UnitError) Unwrap() error { return e.Err }

// Registry holds the registered units in registration order.
type Registry struct {
	mu    sync.RWMutex
	units []Unit
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{} }

// Register adds a unit. Registering the same key again with the same state
// version is a no-op (the first registration serves both, as DSH shares one
// unit between registrations); with another state version it is an error.
func (r *Registry) Register(u Unit) error {
	key, ver := u.Key(), u.StateVersion()
	if key == "" {
		return errors.New("register projection unit: empty key")
	}
	if ver < 0 {
		return fmt.Errorf("register projection unit %q: negative state version %d", key, ver)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, have := range r.units {
		if have.Key() != key {
			continue
		}
		if have.StateVersion() != ver {
			return fmt.Errorf("register projection unit %q: state version %d conflicts with registered version %d", key, ver, have.StateVersion())
		}
		return nil
	}
	r.units = append(r.units, u)
	return nil
}

// StateVersion returns the registered state version of key.
func (r *Registry) StateVersion(key string) (int, bool) {
	for _, u := range r.list() {
		if u.Key() == key {
			return u.StateVersion(), true
		}
	}
	return 0, false
}

// Keys lists the registered keys in registration order.
func (r *Registry) Keys() []string {
	units := r.list()
	keys := make([]string, len(units))
	for i, u := range units {
		keys[i] = u.Key()
	}
	return keys
}

// EventTypes returns the event types the registered units read, sorted, and
// true when every unit declares them (EventTyped); false means some unit
// reads every event, so a reader must load the whole log.
func (r *Registry) EventTypes() ([]string, bool) {
	var types []string
	for _, u := range r.list() {
		typed, ok := u.(EventTyped)
		if !ok {
			return nil, false
		}
		for _, t := range typed.EventTypes() {
			if !slices.Contains(types, t) {
				types = append(types, t)
			}
		}
	}
	slices.Sort(types)
	return types, true
}

// list returns the registered units. Register only ever appends, so the
// prefix a caller holds is never rewritten: the slice is capped at its length
// (an append after it copies or writes past it) rather than copied, which a
// cold listing would otherwise do once per child.
func (r *Registry) list() []Unit {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.units[:len(r.units):len(r.units)]
}

// Snapshot is the views of every unit at one cut of a log.
type Snapshot struct {
	// AsOfSeq is the seq of the last folded event, -1 for an empty log.
	AsOfSeq int64
	// Values holds the view of every unit that did not fail, by key.
	Values map[string]json.RawMessage
}

// Row is one unit's checkpointed state: the state version it was folded
// with, the seq of the last event folded into it (-1 = none), and the state.
type Row struct {
	Ver int
	Seq int64
	Val json.RawMessage
}

// Checkpoint is a fold's state per unit key.
type Checkpoint map[string]Row

// Restore folds every registered unit from its initial state over events.
//
// When a unit fails, the error is a *UnitError (several failures are joined,
// so errors.As finds the first in registration order); the snapshot still
// carries the views of every unit that did not fail, because dsh's listing
// consults only the `subagent` unit and a foreign unit's failure must not
// change its verdict.
func (r *Registry) Restore(events []session.Event) (Snapshot, error) {
	var f Fold
	r.startFold(&f)
	f.Apply(events...)
	return f.Snapshot()
}

// RestoreView is Restore for a caller that reads one unit's view: every
// registered unit is folded and its view rendered and checked just the same,
// and the error is Restore's, but only key's view is kept (nil when key has
// no healthy view), so no map of views is built. A cold listing calls it
// once per child.
func (r *Registry) RestoreView(events []session.Event, key string) (json.RawMessage, error) {
	var f Fold
	r.startFold(&f)
	f.Apply(events...)
	var keep json.RawMessage
	err := f.views(func(k string, v json.RawMessage) {
		if k == key {
			keep = v
		}
	})
	return keep, err
}

// ViewCheckpoint renders the views of a checkpoint's usable rows: rows of
// registered units at their registered state version. Every other row, and
// a row whose view fails, is left out; dropped says why, by key.
func (r *Registry) ViewCheckpoint(cp Checkpoint) (values map[string]json.RawMessage, dropped map[string]string) {
	values = map[string]json.RawMessage{}
	for key, row := range cp {
		u := r.unit(key)
		if u == nil {
			dropped = addDropped(dropped, key, "no registered unit")
			continue
		}
		if row.Ver != u.StateVersion() {
			dropped = addDropped(dropped, key, fmt.Sprintf("state version %d, registered %d", row.Ver, u.StateVersion()))
			continue
		}
		v, err := view(u, row.Val)
		if err != nil {
			dropped = addDropped(dropped, key, err.Error())
			continue
		}
		values[key] = v
	}
	return values, dropped
}

func addDropped(m map[string]string, key, why string) map[string]string {
	if m == nil {
		m = map[string]string{}
	}
	m[key] = why
	return m
}

func (r *Registry) unit(key string) Unit {
	for _, u := range r.list() {
		if u.Key() == key {
			return u
		}
	}
	return nil
}

// Fold is an incremental fold of every registered unit over one session's
// log, for a writer that keeps its projections current as it appends and for
// a full restore. A unit that fails stops folding; the others continue.
type Fold struct {
	units []Unit
	// unit i's state and failure, in one allocation per fold.
	at  []unitFold
	seq int64
}

type unitFold struct {
	state json.RawMessage
	err   error
}

// NewFold starts a fold of the currently registered units from their
// initial states.
func (r *Registry) NewFold() *Fold {
	f := new(Fold)
	r.startFold(f)
	return f
}

// startFold sets f to the start of a fold of the registered units.
func (r *Registry) startFold(f *Fold) {
	units := r.list()
	*f = Fold{units: units, at: make([]unitFold, len(units)), seq: -1}
	for i, u := range units {
		f.at[i].state, f.at[i].err = guard(u.Key(), func() (json.RawMessage, error) { return u.Init(), nil })
	}
}

// Apply folds events, which must continue the log in seq order.
func (f *Fold) Apply(events ...session.Event) {
	for i, u := 0, 0; i < len(events); {
		i, u = f.applyFrom(events, i, u)
	}
}

// applyFrom folds events[i:], starting event i at unit u, until the end or
// a unit panics; it returns where to resume. Recovering once per batch
// rather than once per call keeps skipping an event to a few nanoseconds.
func (f *Fold) applyFrom(events []session.Event, i, u int) (nextEvent, nextUnit int) {
	defer func() {
		if p := recover(); p != nil {
			f.at[u].err = &UnitError{Key: f.units[u].Key(), Err: fmt.Errorf("panic: %v", p)}
			nextEvent, nextUnit = i, u+1
			if nextUnit == len(f.units) {
				f.seq = events[i].Seq
				nextEvent, nextUnit = i+1, 0
			}
		}
	}()
	for ; i < len(events); i++ {
		for ; u < len(f.units); u++ {
			if f.at[u].err != nil {
				continue
			}
			state, err := f.units[u].Apply(f.at[u].state, events[i])
			if err != nil {
				f.at[u].err = &UnitError{Key: f.units[u].Key(), Err: err}
				continue
			}
			f.at[u].state = state
		}
		u = 0
		f.seq = events[i].Seq
	}
	return i, 0
}

// AsOfSeq is the seq of the last folded event, -1 before any.
func (f *Fold) AsOfSeq() int64 { return f.seq }

// Err returns the failures so far, nil when every unit is healthy.
func (f *Fold) Err() error { return errors.Join(f.errs()...) }

// errs is each unit's failure so far, in registration order (nil for a
// healthy unit).
func (f *Fold) errs() []error {
	errs := make([]error, len(f.at))
	for i := range f.at {
		errs[i] = f.at[i].err
	}
	return errs
}

// Snapshot renders every healthy unit's view. A view that fails or is not
// JSON fails its unit (see Registry.Restore for the error).
func (f *Fold) Snapshot() (Snapshot, error) {
	s := Snapshot{AsOfSeq: f.seq, Values: make(map[string]json.RawMessage, len(f.units))}
	err := f.views(func(key string, v json.RawMessage) { s.Values[key] = v })
	return s, err
}

// views renders every healthy unit's view and hands each to keep; the
// error joins, in registration order, the failures so far and every view
// that fails or is not JSON.
func (f *Fold) views(keep func(key string, v json.RawMessage)) error {
	var errs []error // none in the usual case
	for i, u := range f.units {
		if f.at[i].err != nil {
			errs = append(errs, f.at[i].err)
			continue
		}
		v, err := view(u, f.at[i].state)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		keep(u.Key(), v)
	}
	return errors.Join(errs...)
}

// Checkpoint returns the state of every healthy unit as of AsOfSeq, with the
// failures so far. A state that is not JSON fails its unit here, so it never
// reaches the cache.
func (f *Fold) Checkpoint() (Checkpoint, error) {
	cp := make(Checkpoint, len(f.units))
	errs := f.errs()
	for i, u := range f.units {
		if errs[i] != nil {
			continue
		}
		if !json.Valid(f.at[i].state) {
			errs[i] = &UnitError{Key: u.Key(), Err: errors.New("state is not JSON")}
			continue
		}
		cp[u.Key()] = Row{Ver: u.StateVersion(), Seq: f.seq, Val: f.at[i].state}
	}
	return cp, errors.Join(errs...)
}

func view(u Unit, state json.RawMessage) (json.RawMessage, error) {
	v, err := guard(u.Key(), func() (json.RawMessage, error) { return u.View(state) })
	if err != nil {
		return nil, err
	}
	if !json.Valid(v) {
		return nil, &UnitError{Key: u.Key(), Err: errors.New("view is not JSON")}
	}
	return v, nil
}

// guard runs one unit call, turning an error or a panic into a *UnitError.
// Bad data is normal input; a unit that chokes on it fails that session's
// fold, not the process.
func guard(key string, call func() (json.RawMessage, error)) (out json.RawMessage, err error) {
	defer func() {
		if p := recover(); p != nil {
			out, err = nil, &UnitError{Key: key, Err: fmt.Errorf("panic: %v", p)}
		}
	}()
	out, err = call()
	if err != nil {
		return nil, &UnitError{Key: key, Err: err}
	}
	return out, nil
}
