package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/sqlstore"
	"github.com/dsh-project/dsh/internal/storedlog"
)

// insertEvents writes events as rows of session id, exactly as given, with
// one statement: the columns travel as arrays that unnest turns back into
// rows, so a batch costs one round trip whatever its size.
func insertEvents(ctx context.Context, q querier, id string, events []session.Event) error {
	if len(events) == 0 {
		return nil
	}
	n := len(events)
	var (
		seqs, times                      = make([]int64, n), make([]int64, n)
		types                            = make([]string, n)
		data, sources, surfaces, unknown = make([]*string, n), make([]*string, n), make([]*string, n), make([]*string, n)
		ignorable                        = make([]bool, n)
	)
	for i, e := range events {
		r := storedlog.Encode(e)
		seqs[i], types[i], times[i] = r.Seq, r.Type, r.Time
		data[i], sources[i], surfaces[i], unknown[i] = r.Data, r.SourceEventSeqs, r.SurfaceOp, r.UnknownKeys
		ignorable[i] = r.Ignorable == 1
	}
	_, err := q.Exec(ctx, `INSERT INTO events
		(session_id, seq, type, time, data, source_event_seqs, surface_op, ignorable, unknown_keys)
		SELECT $1, * FROM unnest($2::bigint[], $3::text[], $4::bigint[], $5::text[], $6::text[], $7::text[], $8::boolean[], $9::text[])`,
		id, seqs, types, times, data, sources, surfaces, ignorable, unknown)
	if err != nil {
		return fmt.Errorf("insert %d events of session %q: %w", n, id, err)
	}
	return nil
}

// recordVerified stores the validator state after a write dsh has
// validated and counts the write in revision. verified is cleared first so
// the update always moves it from false to true, which is how the
// sessions_bookkeeping_unverifies trigger tells dsh's writes from others.
// A verified log is readable, so no read failure stays recorded, and it
// has changed, so neither does a registry fold (its writer records the new
// one after this, in the same transaction).
func recordVerified(ctx context.Context, q querier, id string, v *session.Validator) error {
	state, err := v.MarshalState()
	if err != nil {
		return dsherr.Wrap(dsherr.Internal, err, "save validation state of session %q", id)
	}
	if _, err := q.Exec(ctx, "UPDATE sessions SET verified = false WHERE id = $1 AND verified", id); err != nil {
		return err
	}
	_, err = q.Exec(ctx, `UPDATE sessions
		SET verified = true, next_seq = $1, validator_state = $2, revision = revision + 1,
			read_failure = NULL, registry_fold = NULL
		WHERE id = $3`, v.Next(), state, id)
	return err
}

// recordReadFailure records that session id's log, as just stored, cannot
// be read: err is what a full read gives (see migration 0007).
func recordReadFailure(ctx context.Context, q querier, id string, err error) error {
	_, werr := q.Exec(ctx, "UPDATE sessions SET read_failure = $1 WHERE id = $2", err.Error(), id)
	return werr
}

// RecordRegistryFold implements backend.RegistryFoldRecorder.
func (s *Store) RecordRegistryFold(ctx context.Context, id string, fold []byte) error {
	tag, err := s.q().Exec(ctx, "UPDATE sessions SET registry_fold = $1 WHERE id = $2", string(fold), id)
	if err == nil && tag.RowsAffected() == 0 {
		err = storedlog.NotFound(id)
	}
	if err != nil {
		return s.storeError(err, "record the registry fold of session "+id)
	}
	return nil
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

// CreateSession implements backend.Writer.
func (s *Store) CreateSession(ctx context.Context, h session.Header, initial []session.Event) error {
	if err := storedlog.CheckStorable(h, initial); err != nil {
		return err
	}
	v, err := storedlog.Replay(h, initial)
	if err != nil {
		return fmt.Errorf("create session %q: %w", h.ID, err)
	}
	err = s.update(ctx, func(view *Store) error {
		q := view.tx
		if err := sqlstore.InsertBareHeader(ctx, pgTx{q}, h); err != nil {
			return err
		}
		if err := insertEvents(ctx, q, h.ID, initial); err != nil {
			return err
		}
		return recordVerified(ctx, q, h.ID, v)
	})
	if err != nil {
		return s.storeError(err, "create session "+h.ID)
	}
	return nil
}

// Append implements backend.Writer. The session's row is locked before its
// stored next seq is compared with expectedNext, so of two writers that
// both expected the same seq the second is refused as stale after the
// first commits; the batch, its bookkeeping and the lock go in one
// transaction.
func (s *Store) Append(ctx context.Context, id string, expectedNext int64, events []session.Event) error {
	if len(events) == 0 {
		return nil
	}
	if storedlog.UnstorableID(id) {
		return storedlog.NotFound(id)
	}
	if err := storedlog.CheckStorable(session.Header{ID: id}, events); err != nil {
		return err
	}
	err := s.update(ctx, func(view *Store) error {
		q := view.tx
		v, stored, err := tailValidator(ctx, q, id)
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
		if err := insertEvents(ctx, q, id, events); err != nil {
			return err
		}
		return recordVerified(ctx, q, id, v)
	})
	if err != nil {
		return s.storeError(err, "append to session "+id)
	}
	return nil
}

// tailValidator locks session id's row and returns a validator positioned
// at the end of its stored log with the stored next seq. A verified log
// restores the saved state; any other is read and validated in full, and
// one with a torn tail or a validation failure cannot be appended to.
func tailValidator(ctx context.Context, q querier, id string) (*session.Validator, int64, error) {
	st, err := readSessionState(ctx, q, id, true)
	if err != nil {
		return nil, 0, err
	}
	if st.verified {
		v, err := session.RestoreValidator(st.header, st.validatorState)
		if err == nil && v.Next() == st.nextSeq {
			return v, st.nextSeq, nil
		}
		// State from an incompatible dsh or inconsistent bookkeeping:
		// revalidate the log instead of trusting it.
	}
	log, err := scanLog(ctx, q, id, false)
	if err != nil {
		return nil, 0, err
	}
	if log.torn != nil {
		return nil, 0, storedlog.TornTailBlocksAppend(id, log.torn)
	}
	v, err := storedlog.Replay(log.state.header, log.events)
	if err != nil {
		return nil, 0, storedlog.FailedValidation(id, err)
	}
	return v, v.Next(), nil
}

// Load implements backend.Writer: the repairing read, under the session's
// row lock.
func (s *Store) Load(ctx context.Context, id string) (*backend.Inspection, error) {
	var ins *backend.Inspection
	err := s.update(ctx, func(view *Store) error {
		q := view.tx
		log, err := scanLog(ctx, q, id, true)
		if err != nil {
			return err
		}
		var v *session.Validator
		ins, v, err = storedlog.Repair(log.state.header, log.events, log.torn, log.state.verified)
		if err != nil || v == nil {
			return err
		}
		if ins.Torn != nil {
			if _, err := q.Exec(ctx, "DELETE FROM events WHERE session_id = $1 AND seq >= $2", id, ins.Torn.FromSeq); err != nil {
				return err
			}
			if _, err := q.Exec(ctx, "DELETE FROM torn_tails WHERE session_id = $1", id); err != nil {
				return err
			}
		}
		if err := insertEvents(ctx, q, id, ins.Closers); err != nil {
			return err
		}
		return recordVerified(ctx, q, id, v)
	})
	if err != nil {
		return nil, s.storeError(err, "load session "+id)
	}
	return ins, nil
}

// ImportSession implements backend.Writer. How the log reads back is
// computed from the rows as written (each event encoded and decoded the
// way a read decodes it), which is what a read in the same transaction
// would return, without reading them back over the network.
func (s *Store) ImportSession(ctx context.Context, h session.Header, events []session.Event, tail *backend.TornTail) (backend.ImportResult, error) {
	if err := storedlog.DuplicateSeqs(h.ID, events); err != nil {
		return backend.ImportResult{}, err
	}
	if err := storedlog.CheckStorable(h, events); err != nil {
		return backend.ImportResult{}, err
	}
	var res backend.ImportResult
	err := s.update(ctx, func(view *Store) error {
		q := view.tx
		if err := sqlstore.InsertBareHeader(ctx, pgTx{q}, h); err != nil {
			return err
		}
		if err := insertEvents(ctx, q, h.ID, events); err != nil {
			return err
		}
		if tail != nil {
			raw := tail.Raw
			if raw == nil {
				raw = []byte{}
			}
			if _, err := q.Exec(ctx, "INSERT INTO torn_tails (session_id, from_seq, reason, raw) VALUES ($1, $2, $3, $4)",
				h.ID, tail.FromSeq, storedlog.StorableReason(tail.Reason), raw); err != nil {
				return err
			}
		}
		res = backend.ImportResult{Events: len(events)}
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
			_, err := q.Exec(ctx, "UPDATE sessions SET next_seq = $1, revision = revision + 1, read_failure = $2 WHERE id = $3",
				len(stored), readFailure(res.Invalid), h.ID)
			return err
		}
		return recordVerified(ctx, q, h.ID, v)
	})
	if err != nil {
		return backend.ImportResult{}, s.storeError(err, "import session "+h.ID)
	}
	return res, nil
}

// ImportDamagedSession implements backend.Writer: the header, the events
// before the damage and the damage as found; the log reads back as
// committed-row corruption at damage.FromSeq.
func (s *Store) ImportDamagedSession(ctx context.Context, h session.Header, prefix []session.Event, damage backend.DamagedLog) (backend.ImportResult, error) {
	if err := storedlog.DuplicateSeqs(h.ID, prefix); err != nil {
		return backend.ImportResult{}, err
	}
	if err := storedlog.CheckStorable(h, prefix); err != nil {
		return backend.ImportResult{}, err
	}
	raw := damage.Raw
	if raw == nil {
		raw = []byte{}
	}
	reason := storedlog.StorableReason(damage.Reason)
	invalid := storedlog.CorruptRow(h.ID, damage.FromSeq, reason)
	err := s.update(ctx, func(view *Store) error {
		q := view.tx
		if err := sqlstore.InsertBareHeader(ctx, pgTx{q}, h); err != nil {
			return err
		}
		if err := insertEvents(ctx, q, h.ID, prefix); err != nil {
			return err
		}
		if _, err := q.Exec(ctx, "INSERT INTO damaged_logs (session_id, from_seq, reason, encoding, raw) VALUES ($1, $2, $3, $4, $5)",
			h.ID, damage.FromSeq, reason, damage.Encoding, raw); err != nil {
			return err
		}
		return recordReadFailure(ctx, q, h.ID, invalid)
	})
	if err != nil {
		return backend.ImportResult{}, s.storeError(err, "import session "+h.ID)
	}
	return backend.ImportResult{Events: len(prefix), Invalid: invalid}, nil
}
