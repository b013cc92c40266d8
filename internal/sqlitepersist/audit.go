package sqlitepersist

import (
	"context"
	"errors"
	"fmt"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/jsjson"

	"github.com/dsh-project/dsh/internal/sqlstore"
	"github.com/dsh-project/dsh/internal/storedlog"
)

// Audit reads session id without changing anything and reports the raw
// facts a reader normally hides: the stored seqs' gaps and, next to the
// valid prefix, the reason the log cannot be read, if any. Only a failure to
// read the store (or an unknown id, wrapping ErrNotFound) is an error.
func (s *Store) Audit(ctx context.Context, id string) (*backend.AuditRead, error) {
	var a *backend.AuditRead
	err := s.read(ctx, func(q Querier) error {
		var err error
		a, err = auditOne(ctx, q, id)
		return err
	})
	if err != nil {
		return nil, s.storeError(err, "audit session "+id)
	}
	return a, nil
}

func auditOne(ctx context.Context, q Querier, id string) (*backend.AuditRead, error) {
	log, err := sqlstore.ScanLog(ctx, sqliteTx{q}, &dialect, id, false)
	var refused *backend.RefusedError
	if errors.As(err, &refused) {
		st, serr := sqlstore.ReadSessionState(ctx, sqliteTx{q}, &dialect, id, false)
		if serr != nil {
			return nil, serr
		}
		return &backend.AuditRead{Header: st.Header, ReadErr: err}, nil
	}
	if errors.Is(err, backend.ErrCorrupt) {
		st, serr := sqlstore.ReadSessionState(ctx, sqliteTx{q}, &dialect, id, false)
		if serr != nil {
			return nil, serr
		}
		gaps, gerr := seqGaps(ctx, q, id)
		if gerr != nil {
			return nil, gerr
		}
		a := &backend.AuditRead{Header: st.Header, Gaps: gaps, Verified: st.Verified, ReadErr: err}
		a.Damaged, a.Prefix, err = sqlstore.ReadDamagedPrefix(ctx, sqliteTx{q}, &dialect, id)
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

// AuditEach implements backend.BatchAuditor in a fixed number of queries
// for the whole batch: the sessions rows (with whether a torn_tails or
// damaged_logs entry exists), then every event row of every id in one
// stream by (session_id, seq), judged by storedlog.AuditBatch while it is
// read. The few logs an import recorded as torn or damaged, and a log whose
// rows are corrupt before its last turn/end, are audited after the stream
// by Audit's own path.
func (s *Store) AuditEach(ctx context.Context, ids []string, fn func(*backend.AuditRead) error) error {
	err := s.read(ctx, func(q Querier) error {
		list := jsjson.StringArray(ids)
		states, err := auditStates(ctx, q, list)
		if err != nil {
			return err
		}
		return storedlog.AuditEach(ctx, ids, states, func(send func(string, []storedlog.Row) error) error {
			rows, err := q.QueryContext(ctx, "SELECT session_id, "+eventColumns+
				" FROM events WHERE session_id IN (SELECT value FROM json_each(?)) ORDER BY session_id, seq", list)
			if err != nil {
				return err
			}
			defer rows.Close()
			return storedlog.StreamLogs(rows, send)
		}, func(id string) (*backend.AuditRead, error) { return auditOne(ctx, q, id) }, fn)
	})
	if err != nil {
		return s.storeError(err, fmt.Sprintf("audit %d sessions", len(ids)))
	}
	return nil
}

func auditStates(ctx context.Context, q Querier, list string) (map[string]*storedlog.AuditState, error) {
	rows, err := q.QueryContext(ctx, "SELECT "+sqlstore.HeaderColumns+`, verified,
		EXISTS (SELECT 1 FROM torn_tails t WHERE t.session_id = s.id) OR EXISTS (SELECT 1 FROM damaged_logs d WHERE d.session_id = s.id)
			OR EXISTS (SELECT 1 FROM import_refusals r WHERE r.session_id = s.id AND r.listed = 1)
		FROM sessions s WHERE id IN (SELECT value FROM json_each(?))`, list)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	states := map[string]*storedlog.AuditState{}
	for rows.Next() {
		var r headerRow
		var verified int64
		st := &storedlog.AuditState{}
		if err := rows.Scan(append(r.targets(), &verified, &st.Recorded)...); err != nil {
			return nil, err
		}
		st.Header, st.Verified = r.header(), verified == 1
		states[st.Header.ID] = st
	}
	return states, rows.Err()
}

// seqGaps finds the holes in session id's stored seqs with one pass over its
// primary-key range.
func seqGaps(ctx context.Context, q Querier, id string) ([]backend.SeqGap, error) {
	rows, err := q.QueryContext(ctx, `SELECT prev + 1, seq - 1 FROM (
		SELECT seq, LAG(seq, 1, -1) OVER (ORDER BY seq) AS prev
		  FROM events WHERE session_id = ?)
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
