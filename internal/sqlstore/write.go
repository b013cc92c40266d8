package sqlstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/storedlog"
)

// recordVerified stores the validator state after a write that dsh has
// validated, and counts the write in revision. verified is cleared first so
// the update always moves it from false to true, which is how the
// sessions_bookkeeping_unverifies trigger tells dsh's writes from others.
// A verified log is readable, so no read failure stays recorded, and it
// has changed, so neither does a registry fold (its writer records the new
// one after this, in the same transaction). inserted says the row was
// inserted by this write: verified is then still its default, false, and
// clearing it would be a statement that changes nothing (on PostgreSQL, a
// round trip and a statement trigger per session created or imported).
func recordVerified(ctx context.Context, q Tx, id string, v *session.Validator, inserted bool) error {
	state, err := v.MarshalState()
	if err != nil {
		return dsherr.Wrap(dsherr.Internal, err, "save validation state of session %q", id)
	}
	if !inserted {
		if err := execLater(ctx, q, nil, "UPDATE sessions SET verified = FALSE WHERE id = ? AND verified = TRUE", id); err != nil {
			return err
		}
	}
	return execLater(ctx, q, nil, `UPDATE sessions
		SET verified = TRUE, next_seq = ?, validator_state = ?, revision = revision + 1,
			read_failure = NULL, registry_fold = NULL
		WHERE id = ?`, v.Next(), state, id)
}

// recordReadFailure records that session id's log, as just stored, cannot
// be read: err is what a full read gives (see migration 0007).
func recordReadFailure(ctx context.Context, q Tx, id string, err error) error {
	return execLater(ctx, q, nil, "UPDATE sessions SET read_failure = ? WHERE id = ?", err.Error(), id)
}

// RecordRegistryFold implements backend.RegistryFoldRecorder.
func (c Core) RecordRegistryFold(ctx context.Context, id string, fold []byte) error {
	err := execLater(ctx, c.db.Q(), foundRow(id), "UPDATE sessions SET registry_fold = ? WHERE id = ?", string(fold), id)
	if err != nil {
		return c.db.StoreError(err, "record the registry fold of session "+id)
	}
	return nil
}

// foundRow is the check of a statement that must change session id's row:
// none changed means the session is not stored.
func foundRow(id string) func(rows int64) error {
	return func(n int64) error {
		if n == 0 {
			return storedlog.NotFound(id)
		}
		return nil
	}
}

// readFailure is the read_failure column for a log a read fails on with
// err (nil: it reads).
func readFailure(err error) *string {
	if err == nil {
		return nil
	}
	msg := err.Error()
	return &msg
}

// CreateSession implements backend.Writer: a new session with its initial
// events (a fork's seed, for example). The header and events are validated
// as DSH validates a log it restores; an invalid one is refused with an
// error wrapping *session.ValidationError and nothing is written. An
// existing id is an error wrapping ErrDuplicate.
func (c Core) CreateSession(ctx context.Context, h session.Header, initial []session.Event) error {
	if err := storedlog.CheckStorable(h, initial); err != nil {
		return err
	}
	v, err := storedlog.Replay(h, initial)
	if err != nil {
		return fmt.Errorf("create session %q: %w", h.ID, err)
	}
	err = c.db.Write(ctx, func(q Tx) error {
		if err := InsertBareHeader(ctx, q, h); err != nil {
			return err
		}
		if err := c.d.InsertEvents(ctx, q, h.ID, initial); err != nil {
			return err
		}
		return recordVerified(ctx, q, h.ID, v, true)
	})
	if err != nil {
		return c.db.StoreError(err, "create session "+h.ID)
	}
	return nil
}

// Append implements backend.Writer: events go to the end of session id's
// log in one write transaction, under the session's row lock.
// expectedNext is the seq the writer believes comes next; when the stored
// log disagrees the append is refused with a *StaleWriterError, so of two
// writers that both expected the same seq the second is refused after the
// first commits. The batch is validated against the stored validation
// state (its cost does not grow with the log); an invalid batch is refused
// with an error wrapping *session.ValidationError. A refused append writes
// nothing, and no append ever changes an earlier row. An empty batch is a
// no-op.
func (c Core) Append(ctx context.Context, id string, expectedNext int64, events []session.Event) error {
	if len(events) == 0 {
		return nil
	}
	if storedlog.UnstorableID(id) {
		return storedlog.NotFound(id)
	}
	if err := storedlog.CheckStorable(session.Header{ID: id}, events); err != nil {
		return err
	}
	err := c.db.Write(ctx, func(q Tx) error {
		v, stored, err := c.tailValidator(ctx, q, id)
		if err != nil {
			return err
		}
		if expectedNext != stored {
			return storedlog.StaleWriter(id, expectedNext, stored)
		}
		for _, e := range events {
			if err := v.Add(e); err != nil {
				return fmt.Errorf("append to session %q refused: %w", id, err)
			}
		}
		if err := c.d.InsertEvents(ctx, q, id, events); err != nil {
			return err
		}
		return recordVerified(ctx, q, id, v, false)
	})
	if err != nil {
		return c.db.StoreError(err, "append to session "+id)
	}
	return nil
}

// tailValidator locks session id's row and returns a validator positioned
// at the end of its stored log with the stored next seq. A verified log
// restores the saved state; any other log is read and validated in full
// first, and one with a torn tail or a validation failure cannot be
// appended to.
func (c Core) tailValidator(ctx context.Context, q Tx, id string) (*session.Validator, int64, error) {
	st, err := ReadSessionState(ctx, q, c.d, id, true)
	if err != nil {
		return nil, 0, err
	}
	if st.Verified {
		v, err := session.RestoreValidator(st.Header, st.ValidatorState)
		if err == nil && v.Next() == st.NextSeq {
			return v, st.NextSeq, nil
		}
		// State from an incompatible dsh or inconsistent bookkeeping:
		// revalidate the log instead of trusting it.
	}
	log, err := ScanLog(ctx, q, c.d, id, false)
	if err != nil {
		return nil, 0, err
	}
	if log.Torn != nil {
		return nil, 0, storedlog.TornTailBlocksAppend(id, log.Torn)
	}
	v, err := storedlog.Replay(log.State.Header, log.Events)
	if err != nil {
		return nil, 0, storedlog.FailedValidation(id, err)
	}
	return v, v.Next(), nil
}

// Load implements backend.Writer: the repairing read used by resume. It
// reads session id like Inspect, under the session's row lock, and then,
// in the same write transaction, deletes a torn tail, appends the closers
// of an interrupted turn (as DSH's repair does) and records the log as
// verified. The result's Torn and Closers describe what the repair did;
// Events followed by Closers is now the stored log. Loading a verified log
// that needs no repair writes nothing; a valid log that was changed
// outside dsh is recorded as verified again.
func (c Core) Load(ctx context.Context, id string) (*backend.Inspection, error) {
	var ins *backend.Inspection
	err := c.db.Write(ctx, func(q Tx) error {
		log, err := ScanLog(ctx, q, c.d, id, true)
		if err != nil {
			return err
		}
		var v *session.Validator
		ins, v, err = storedlog.Repair(log.State.Header, log.Events, log.Torn, log.State.Verified)
		if err != nil || v == nil {
			return err
		}
		if ins.Torn != nil {
			if _, err := q.Exec(ctx, "DELETE FROM events WHERE session_id = ? AND seq >= ?", id, ins.Torn.FromSeq); err != nil {
				return err
			}
			if _, err := q.Exec(ctx, "DELETE FROM torn_tails WHERE session_id = ?", id); err != nil {
				return err
			}
		}
		if err := c.d.InsertEvents(ctx, q, id, ins.Closers); err != nil {
			return err
		}
		return recordVerified(ctx, q, id, v, false)
	})
	if err != nil {
		return nil, c.db.StoreError(err, "load session "+id)
	}
	return ins, nil
}

// ImportSession implements backend.Writer: a session stored exactly as
// found in a foreign corpus, the header and events as given even when DSH
// would reject them (gaps included), and the torn tail's bytes in
// torn_tails. It is the only write path that does not refuse invalid logs,
// and is meant for import, never for normal writes. An existing id is an
// error wrapping ErrDuplicate; whether that is a conflict or an idempotent
// re-import is the caller's decision.
func (c Core) ImportSession(ctx context.Context, h session.Header, events []session.Event, tail *backend.TornTail) (backend.ImportResult, error) {
	return c.importSession(ctx, h, events, tail, nil)
}

// ImportDamagedSession implements backend.Writer: a session whose log a
// foreign corpus holds damaged inside its committed region, stored as the
// header, the valid events before the damage, and the rest as found in
// damaged_logs. The log reads back as corruption at damage.FromSeq (the
// result's Invalid), exactly as DSH's inspect fails on the source.
func (c Core) ImportDamagedSession(ctx context.Context, h session.Header, prefix []session.Event, damage backend.DamagedLog) (backend.ImportResult, error) {
	return c.importSession(ctx, h, prefix, nil, &damage)
}

func (c Core) importSession(ctx context.Context, h session.Header, events []session.Event, tail *backend.TornTail, damage *backend.DamagedLog) (backend.ImportResult, error) {
	if err := storedlog.DuplicateSeqs(h.ID, events); err != nil {
		return backend.ImportResult{}, err
	}
	if err := storedlog.CheckStorable(h, events); err != nil {
		return backend.ImportResult{}, err
	}
	var res backend.ImportResult
	err := c.db.Write(ctx, func(q Tx) error {
		if err := InsertBareHeader(ctx, q, h); err != nil {
			return err
		}
		if err := c.d.ImportEvents(ctx, q, h.ID, events); err != nil {
			return err
		}
		if tail != nil {
			raw := tail.Raw
			if raw == nil {
				raw = []byte{}
			}
			if err := execLater(ctx, q, nil, "INSERT INTO torn_tails (session_id, from_seq, reason, raw) VALUES (?, ?, ?, ?)",
				h.ID, tail.FromSeq, storedlog.StorableReason(tail.Reason), raw); err != nil {
				return err
			}
		}
		if damage != nil {
			raw := damage.Raw
			if raw == nil {
				raw = []byte{}
			}
			if err := execLater(ctx, q, nil, "INSERT INTO damaged_logs (session_id, from_seq, reason, encoding, raw) VALUES (?, ?, ?, ?, ?)",
				h.ID, damage.FromSeq, storedlog.StorableReason(damage.Reason), damage.Encoding, raw); err != nil {
				return err
			}
		}
		// The log is judged from the rows as written (each event encoded
		// and decoded the way a read decodes it), as a read in this
		// transaction would return them, without reading them back.
		res = backend.ImportResult{Events: len(events)}
		if damage != nil {
			res.Invalid = storedlog.CorruptRow(h.ID, damage.FromSeq, storedlog.StorableReason(damage.Reason))
			return recordReadFailure(ctx, q, h.ID, res.Invalid)
		}
		stored, torn, err := storedlog.Split(h.ID, storedlog.ReadBack(events, tail), storedlog.StoredTail(tail))
		if errors.Is(err, backend.ErrCorrupt) {
			res.Invalid = err
			return recordReadFailure(ctx, q, h.ID, err)
		}
		if err != nil {
			return err
		}
		var v *session.Validator
		res, v = storedlog.Imported(h, len(events), stored, torn)
		if v == nil {
			return execLater(ctx, q, nil, "UPDATE sessions SET next_seq = ?, revision = revision + 1, read_failure = ? WHERE id = ?",
				len(stored), readFailure(res.Invalid), h.ID)
		}
		return recordVerified(ctx, q, h.ID, v, true)
	})
	if err != nil {
		return backend.ImportResult{}, c.db.StoreError(err, "import session "+h.ID)
	}
	return res, nil
}
