package sqlitepersist

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"

	"github.com/dsh-project/dsh/internal/jsjson"

	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/storedlog"
)

// Audit reads session id without changing anything and reports the raw
// facts a reader normally hides: the stored seqs' gaps and, next to the
// valid prefix, the reason the log cannot be read, if any. Only a failure to
// read the store (or an unknown id, wrapping ErrNotFound) is an error.
func (s *Store) Audit(ctx context.Context, id string) (*AuditRead, error) {
	var a *AuditRead
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

func auditOne(ctx context.Context, q Querier, id string) (*AuditRead, error) {
	log, err := scanLog(ctx, q, id)
	if errors.Is(err, ErrCorrupt) {
		st, serr := readSessionState(ctx, q, id)
		if serr != nil {
			return nil, serr
		}
		gaps, gerr := seqGaps(ctx, q, id)
		if gerr != nil {
			return nil, gerr
		}
		a := &AuditRead{Header: st.header, Gaps: gaps, Verified: st.verified, ReadErr: err}
		a.Damaged, a.Prefix, err = readDamagedPrefix(ctx, q, id)
		return a, err
	}
	if err != nil {
		return nil, err
	}
	// A verified log was written contiguously by dsh and no row has
	// changed since (the triggers clear the flag on any other change),
	// so only other logs can have holes.
	var gaps []SeqGap
	if !log.state.verified {
		if gaps, err = seqGaps(ctx, q, id); err != nil {
			return nil, err
		}
	}
	return storedlog.Audit(log.state.header, log.events, log.torn, log.state.verified, gaps), nil
}

// AuditEach implements backend.BatchAuditor in a fixed number of queries
// for the whole batch: the sessions rows (with whether a torn_tails or
// damaged_logs entry exists), then every event row of every id in one
// stream by (session_id, seq). While the stream is read, other goroutines
// decode, split and judge the logs already read, and fn gets each result on
// the calling goroutine; a few logs are in flight at a time. The few logs an
// import recorded as torn or damaged, and a log whose rows are corrupt
// before its last turn/end, are audited after the stream by Audit's own
// path.
func (s *Store) AuditEach(ctx context.Context, ids []string, fn func(*AuditRead) error) error {
	err := s.read(ctx, func(q Querier) error {
		list := jsjson.StringArray(ids)
		states, err := auditStates(ctx, q, list)
		if err != nil {
			return err
		}
		var aside []string
		for _, id := range ids {
			st, ok := states[id]
			switch {
			case !ok:
				return storedlog.NotFound(id)
			case st.recorded:
				aside = append(aside, id)
			}
		}
		stop := make(chan struct{})
		logs := make(chan auditJob, auditWorkers)
		results := make(chan auditResult, auditWorkers)
		var readErr error
		go func() {
			readErr = streamLogs(ctx, q, list, states, logs, stop)
			close(logs)
		}()
		var workers sync.WaitGroup
		for range auditWorkers {
			workers.Add(1)
			go func() {
				defer workers.Done()
				for job := range logs {
					decoded := make([]storedlog.Decoded, len(job.rows))
					for i := range job.rows {
						decoded[i] = storedlog.DecodeRow(&job.rows[i])
					}
					a, ok := auditRows(job.state, decoded)
					results <- auditResult{id: job.state.header.ID, audit: a, ok: ok}
				}
			}()
		}
		go func() {
			workers.Wait()
			close(results)
		}()
		var fnErr error
		for r := range results {
			switch {
			case fnErr != nil:
			case !r.ok:
				aside = append(aside, r.id)
			default:
				if fnErr = fn(r.audit); fnErr != nil {
					close(stop)
				}
			}
		}
		if fnErr != nil {
			return fnErr
		}
		if readErr != nil {
			return readErr
		}
		for _, id := range ids {
			if st := states[id]; !st.seen && !st.recorded {
				a, _ := auditRows(st, nil)
				if err := fn(a); err != nil {
					return err
				}
			}
		}
		for _, id := range aside {
			a, err := auditOne(ctx, q, id)
			if err != nil {
				return err
			}
			if err := fn(a); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return s.storeError(err, fmt.Sprintf("audit %d sessions", len(ids)))
	}
	return nil
}

// auditWorkers is how many goroutines judge the logs AuditEach reads (and
// how many logs wait for them).
const auditWorkers = 2

type auditJob struct {
	state *auditState
	rows  []storedlog.Row
}

type auditResult struct {
	id    string
	audit *AuditRead
	ok    bool
}

// streamLogs reads the event rows of every session in list (the logs of
// states without a recorded torn tail or damage) and sends each log whole,
// still to be decoded, to logs, until stop is closed. Cancellation is checked
// once per log.
func streamLogs(ctx context.Context, q Querier, list string, states map[string]*auditState, logs chan<- auditJob, stop <-chan struct{}) error {
	rows, err := q.QueryContext(ctx, "SELECT session_id, "+eventColumns+
		" FROM events WHERE session_id IN (SELECT value FROM json_each(?)) ORDER BY session_id, seq", list)
	if err != nil {
		return err
	}
	defer rows.Close()
	var (
		cur   *auditState
		log   []storedlog.Row
		r     storedlog.Row
		rowID string
	)
	targets := append([]any{&rowID}, r.Targets()...)
	send := func() error {
		if cur == nil || cur.recorded {
			return nil
		}
		select {
		case logs <- auditJob{state: cur, rows: log}:
			return ctx.Err()
		case <-stop:
			return errStopped
		}
	}
	for rows.Next() {
		r = storedlog.Row{}
		if err := rows.Scan(targets...); err != nil {
			return err
		}
		if cur == nil || rowID != cur.header.ID {
			if err := send(); err != nil {
				return err
			}
			cur, log = states[rowID], nil
			cur.seen = true
		}
		if !cur.recorded {
			log = append(log, r)
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if err := send(); err != nil {
		return err
	}
	return rows.Close()
}

// errStopped ends a stream whose consumer has given up (its error is the
// one reported).
var errStopped = errors.New("audit stream stopped")

// auditState is what AuditEach reads of one sessions row.
type auditState struct {
	header   session.Header
	verified bool
	// recorded: an import recorded a torn tail or damage for the log.
	recorded bool
	// seen: the stream had rows of the log.
	seen bool
}

func auditStates(ctx context.Context, q Querier, list string) (map[string]*auditState, error) {
	rows, err := q.QueryContext(ctx, "SELECT "+headerColumns+`, verified,
		EXISTS (SELECT 1 FROM torn_tails t WHERE t.session_id = s.id) OR EXISTS (SELECT 1 FROM damaged_logs d WHERE d.session_id = s.id)
		FROM sessions s WHERE id IN (SELECT value FROM json_each(?))`, list)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	states := map[string]*auditState{}
	for rows.Next() {
		var r headerRow
		var verified int64
		st := &auditState{}
		if err := rows.Scan(append(r.targets(), &verified, &st.recorded)...); err != nil {
			return nil, err
		}
		st.header, st.verified = r.header(), verified == 1
		states[st.header.ID] = st
	}
	return states, rows.Err()
}

// auditRows is auditOne for a log without a recorded torn tail or damage,
// from all of its rows: false when the commit rule finds corruption, which
// auditOne reports with the damaged prefix.
func auditRows(st *auditState, rows []storedlog.Decoded) (*AuditRead, bool) {
	id := st.header.ID
	events, torn, err := storedlog.Split(id, rows, nil)
	if err != nil {
		return nil, false
	}
	// As auditOne: a verified log has no holes; another's are found in the
	// seqs just read, as seqGaps finds them.
	var gaps []SeqGap
	if !st.verified {
		prev := int64(-1)
		for _, r := range rows {
			if r.Seq > prev+1 {
				gaps = append(gaps, SeqGap{From: prev + 1, To: r.Seq - 1})
			}
			prev = r.Seq
		}
	}
	return storedlog.Audit(st.header, events, torn, st.verified, gaps), true
}

// readDamagedPrefix reads an imported damaged log: its damaged_logs row and
// the events rows before it, nil when the session has none.
func readDamagedPrefix(ctx context.Context, q Querier, id string) (*DamagedLog, []session.Event, error) {
	d, err := readDamagedLog(ctx, q, id)
	if err != nil || d == nil {
		return nil, nil, err
	}
	rows, err := decodeRows(ctx, q, 0, "SELECT "+eventColumns+" FROM events WHERE session_id = ? ORDER BY seq", id)
	if err != nil {
		return nil, nil, err
	}
	prefix, err := storedlog.Verified(id, rows)
	if err != nil {
		return nil, nil, err
	}
	return d, prefix, nil
}

// seqGaps finds the holes in session id's stored seqs with one pass over its
// primary-key range.
func seqGaps(ctx context.Context, q Querier, id string) ([]SeqGap, error) {
	rows, err := q.QueryContext(ctx, `SELECT prev + 1, seq - 1 FROM (
		SELECT seq, LAG(seq, 1, -1) OVER (ORDER BY seq) AS prev
		  FROM events WHERE session_id = ?)
		WHERE seq > prev + 1 ORDER BY seq`, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var gaps []SeqGap
	for rows.Next() {
		var g SeqGap
		if err := rows.Scan(&g.From, &g.To); err != nil {
			return nil, err
		}
		gaps = append(gaps, g)
	}
	return gaps, rows.Err()
}

// CountSessions counts the stored sessions, or only those with origin
// "subagent" when subagentOnly is set.
func (s *Store) CountSessions(ctx context.Context, subagentOnly bool) (int, error) {
	query := "SELECT count(*) FROM sessions"
	if subagentOnly {
		query += " WHERE origin = 'subagent'"
	}
	var n int
	if err := s.Querier().QueryRowContext(ctx, query).Scan(&n); err != nil {
		return 0, s.storeError(err, "count sessions")
	}
	return n, nil
}

// EachParent calls fn with every distinct parentSession value, in byte
// order: of any session, or of subagent-origin sessions when subagentOnly is
// set. It pages through the parent index, so no cursor stays open while fn
// runs.
func (s *Store) EachParent(ctx context.Context, subagentOnly bool, fn func(parent string) error) error {
	const page = 512
	filter := "parent_session IS NOT NULL"
	if subagentOnly {
		filter = "origin = 'subagent' AND parent_session IS NOT NULL"
	}
	first := "SELECT DISTINCT parent_session FROM sessions WHERE " + filter + " ORDER BY parent_session LIMIT ?"
	next := "SELECT DISTINCT parent_session FROM sessions WHERE " + filter + " AND parent_session > ? ORDER BY parent_session LIMIT ?"
	var after *string
	for {
		var rows *sql.Rows
		var err error
		if after == nil {
			rows, err = s.Querier().QueryContext(ctx, first, page)
		} else {
			rows, err = s.Querier().QueryContext(ctx, next, *after, page)
		}
		if err != nil {
			return s.storeError(err, "list parents")
		}
		var batch []string
		for rows.Next() {
			var p string
			if err := rows.Scan(&p); err != nil {
				rows.Close()
				return s.storeError(err, "list parents")
			}
			batch = append(batch, p)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return s.storeError(err, "list parents")
		}
		for _, p := range batch {
			if err := fn(p); err != nil {
				return err
			}
		}
		if len(batch) < page {
			return nil
		}
		after = &batch[len(batch)-1]
	}
}

// RootHeaders calls fn for every session without a parentSession (only the
// subagent-origin ones when subagentOnly is set), in (createdAt, id) order.
func (s *Store) RootHeaders(ctx context.Context, subagentOnly bool, fn func(session.Header) error) error {
	query := "SELECT " + headerColumns + " FROM sessions WHERE parent_session IS NULL"
	if subagentOnly {
		query += " AND origin = 'subagent'"
	}
	return s.eachHeader(ctx, fn, "list root sessions", query+" ORDER BY created_at, id")
}

// UnverifyChildren marks the logs of parent's children as changed outside
// dsh's write paths, as the triggers do after a foreign edit: their next
// read validates them in full. For benchmark corpora of cold reads.
func (s *Store) UnverifyChildren(ctx context.Context, parent string) error {
	if _, err := s.Querier().ExecContext(ctx, "UPDATE sessions SET verified = 0 WHERE parent_session = ?", parent); err != nil {
		return s.storeError(err, "mark the children of "+parent+" unverified")
	}
	return nil
}
