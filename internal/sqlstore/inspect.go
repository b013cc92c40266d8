package sqlstore

import (
	"context"
	"errors"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/storedlog"
)

// Inspect implements backend.LogReader in one read snapshot: the header,
// the valid stored prefix of session id's log (a torn tail is cut off in
// the result, not in the store) and the closers an interrupted turn would
// get. A log that fails DSH's validation is an error wrapping
// *session.ValidationError; damage before the last committed turn/end is
// an error wrapping ErrCorrupt.
func (c Core) Inspect(ctx context.Context, id string) (*backend.Inspection, error) {
	var ins *backend.Inspection
	err := c.db.Read(ctx, func(q Tx) error {
		var err error
		ins, err = c.inspect(ctx, q, id)
		return err
	})
	if err != nil {
		return nil, c.db.StoreError(err, "inspect session "+id)
	}
	return ins, nil
}

func (c Core) inspect(ctx context.Context, q Tx, id string) (*backend.Inspection, error) {
	log, err := ScanLog(ctx, q, c.d, id, false)
	if err != nil {
		return nil, err
	}
	return storedlog.Inspect(log.State.Header, log.Events, log.Torn, log.State.Verified)
}

// InspectTypes implements backend.LogReader: Inspect with Events and
// Closers filtered to the given types (all types when none are given). For
// a log recorded as verified with no torn tail it reads only the matching
// rows (through the partial index the types' condition names,
// Dialect.TypeCondition) plus the open turn, if any, for the closers; any
// other log is read and judged whole.
func (c Core) InspectTypes(ctx context.Context, id string, types ...string) (*backend.Inspection, error) {
	if len(types) == 0 {
		return c.Inspect(ctx, id)
	}
	var ins *backend.Inspection
	err := c.db.Read(ctx, func(q Tx) error {
		st, err := ReadSessionState(ctx, q, c.d, id, false)
		if err != nil {
			return err
		}
		tail, err := ReadTornTail(ctx, q, id)
		if err != nil {
			return err
		}
		if st.Verified && tail == nil {
			ins, err = c.inspectVerifiedTypes(ctx, q, st, types)
			return err
		}
		if ins, err = c.inspect(ctx, q, id); err != nil {
			return err
		}
		ins.Events = storedlog.FilterTypes(ins.Events, types)
		ins.Closers = storedlog.FilterTypes(ins.Closers, types)
		return nil
	})
	if err != nil {
		return nil, c.db.StoreError(err, "inspect session "+id)
	}
	return ins, nil
}

// inspectVerifiedTypes is InspectTypes' fast path. Its result equals the
// filtered full Inspect because verified means every row was validated by
// a dsh write path and no row changed since (the triggers of migration
// 0001 clear the flag on any other change).
func (c Core) inspectVerifiedTypes(ctx context.Context, q Tx, st SessionState, types []string) (*backend.Inspection, error) {
	id := st.Header.ID
	cond, args := c.d.TypeCondition(types)
	events, err := DecodeVerified(ctx, q, id,
		"SELECT "+c.d.EventColumns+" FROM events WHERE session_id = ? AND "+cond+" ORDER BY seq", append([]any{id}, args...)...)
	if err != nil {
		return nil, err
	}
	closers, err := c.openTurnClosers(ctx, q, id)
	if err != nil {
		return nil, err
	}
	return &backend.Inspection{
		Header:   st.Header,
		Events:   events,
		Closers:  storedlog.FilterTypes(closers, types),
		Verified: true,
	}, nil
}

// openTurnClosers computes InterruptedTurnClosers from the rows since the
// last turn boundary: DSH's closer scan resets its state at every
// turn/start, so that suffix yields the same closers as the whole log.
func (c Core) openTurnClosers(ctx context.Context, q Tx, id string) ([]session.Event, error) {
	var seq int64
	var typ string
	err := q.QueryRow(ctx, `SELECT seq, type FROM events
		WHERE session_id = ? AND type IN ('`+session.TypeTurnStart+`', '`+session.TypeTurnEnd+`')
		ORDER BY seq DESC LIMIT 1`, id).Scan(&seq, &typ)
	if errors.Is(err, ErrNoRows) || (err == nil && typ != session.TypeTurnStart) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	suffix, err := DecodeVerified(ctx, q, id,
		"SELECT "+c.d.EventColumns+" FROM events WHERE session_id = ? AND seq >= ? ORDER BY seq", id, seq)
	if err != nil {
		return nil, err
	}
	return session.InterruptedTurnClosers(suffix), nil
}

// DecodeVerified decodes rows of a verified log, where any undecodable row
// means the store changed behind the triggers' back.
func DecodeVerified(ctx context.Context, q Tx, id, query string, args ...any) ([]session.Event, error) {
	rows, err := DecodeRows(ctx, q, 0, query, args...)
	if err != nil {
		return nil, err
	}
	return storedlog.Verified(id, rows)
}

// Audit implements backend.LogReader: session id read without changing
// anything, with the raw facts a reader normally hides: the stored seqs'
// gaps and, next to the valid prefix, the reason the log cannot be read,
// if any. Only a failure to read the store (or an unknown id, wrapping
// ErrNotFound) is an error.
func (c Core) Audit(ctx context.Context, id string) (*backend.AuditRead, error) {
	var a *backend.AuditRead
	err := c.db.Read(ctx, func(q Tx) error {
		var err error
		a, err = c.AuditOne(ctx, q, id)
		return err
	})
	if err != nil {
		return nil, c.db.StoreError(err, "audit session "+id)
	}
	return a, nil
}

// AuditOne is Audit inside the caller's transaction (a batch audit's
// single-log path).
func (c Core) AuditOne(ctx context.Context, q Tx, id string) (*backend.AuditRead, error) {
	log, err := ScanLog(ctx, q, c.d, id, false)
	var refused *backend.RefusedError
	if errors.As(err, &refused) {
		st, serr := ReadSessionState(ctx, q, c.d, id, false)
		if serr != nil {
			return nil, serr
		}
		return &backend.AuditRead{Header: st.Header, ReadErr: err}, nil
	}
	if errors.Is(err, backend.ErrCorrupt) {
		st, serr := ReadSessionState(ctx, q, c.d, id, false)
		if serr != nil {
			return nil, serr
		}
		gaps, gerr := seqGaps(ctx, q, id)
		if gerr != nil {
			return nil, gerr
		}
		a := &backend.AuditRead{Header: st.Header, Gaps: gaps, Verified: st.Verified, ReadErr: err}
		a.Damaged, a.Prefix, err = ReadDamagedPrefix(ctx, q, c.d, id)
		return a, err
	}
	if err != nil {
		return nil, err
	}
	// A verified log was written contiguously by dsh and no row has
	// changed since (the triggers clear the flag on any other change),
	// so only other logs can have holes.
	var gaps []backend.SeqGap
	if !log.State.Verified {
		if gaps, err = seqGaps(ctx, q, id); err != nil {
			return nil, err
		}
	}
	return storedlog.Audit(log.State.Header, log.Events, log.Torn, log.State.Verified, gaps), nil
}

// seqGaps finds the holes in session id's stored seqs with one pass over
// its primary key range.
func seqGaps(ctx context.Context, q Tx, id string) ([]backend.SeqGap, error) {
	rows, err := q.Query(ctx, `SELECT prev + 1, seq - 1 FROM (
		SELECT seq, LAG(seq, 1, CAST(-1 AS BIGINT)) OVER (ORDER BY seq) AS prev
		  FROM events WHERE session_id = ?) AS s
		WHERE seq > prev + 1 ORDER BY seq`, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var gaps []backend.SeqGap
	for rows.Next() {
		var g backend.SeqGap
		if err := rows.Scan(&g.From, &g.To); err != nil {
			return nil, err
		}
		gaps = append(gaps, g)
	}
	return gaps, rows.Err()
}
