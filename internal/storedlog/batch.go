package storedlog

import (
	"context"
	"errors"
	"runtime"
	"sync"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/session"
)

// StreamLogs scans rows that select session_id and then the event columns
// in Targets' order, ordered by session_id then seq (any order of the
// sessions, each log contiguous), and calls send with each session's rows
// whole, still to be decoded. The caller closes rows.
func StreamLogs(rows Rows, send func(id string, log []Row) error) error {
	var (
		cur, id string
		log     []Row
		r       Row
		started bool
	)
	targets := append([]any{&id}, r.Targets()...)
	for rows.Next() {
		r = Row{}
		if err := rows.Scan(targets...); err != nil {
			return err
		}
		if !started || id != cur {
			if started {
				if err := send(cur, log); err != nil {
					return err
				}
			}
			cur, log, started = id, nil, true
		}
		log = append(log, r)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if started {
		return send(cur, log)
	}
	return nil
}

// LogRows is one log read whole for AuditBatch: its sessions row's header
// and verified flag, and every stored row in seq order.
type LogRows struct {
	Header   session.Header
	Verified bool
	Rows     []Row
}

// auditWorkers is how many goroutines judge the logs AuditBatch reads (and
// how many logs wait for them): one per processor the runtime uses
// (GOMAXPROCS), the read itself being one stream on one connection.
func auditWorkers() int { return runtime.GOMAXPROCS(0) }

// errStopped ends a read whose consumer has given up (the consumer's error
// is the one reported).
var errStopped = errors.New("audit stream stopped")

// AuditBatch is the part of a batch audit (backend.BatchAuditor) both
// stores share. read runs on its own goroutine and sends each log it reads
// (with no torn tail or damage recorded by an import) whole; other
// goroutines decode and judge the logs with AuditRows while read goes on,
// and fn gets every result on the calling goroutine, so a few logs are in
// flight at a time. It returns the ids whose rows are corrupt before their
// last turn/end, which the store's own Audit must report. Cancellation is
// checked once per log.
func AuditBatch(ctx context.Context, read func(send func(LogRows) error) error, fn func(*backend.AuditRead) error) (corrupt []string, err error) {
	n := auditWorkers()
	stop := make(chan struct{})
	logs := make(chan LogRows, n)
	type result struct {
		id    string
		audit *backend.AuditRead
		ok    bool
	}
	results := make(chan result, n)
	var readErr error
	go func() {
		defer close(logs)
		readErr = read(func(l LogRows) error {
			select {
			case logs <- l:
				return ctx.Err()
			case <-stop:
				return errStopped
			}
		})
	}()
	var workers sync.WaitGroup
	for range n {
		workers.Add(1)
		go func() {
			defer workers.Done()
			for l := range logs {
				decoded := make([]Decoded, len(l.Rows))
				for i := range l.Rows {
					decoded[i] = DecodeRow(&l.Rows[i])
				}
				a, ok := AuditRows(l.Header, decoded, l.Verified)
				results <- result{id: l.Header.ID, audit: a, ok: ok}
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
			corrupt = append(corrupt, r.id)
		default:
			if fnErr = fn(r.audit); fnErr != nil {
				close(stop)
			}
		}
	}
	if fnErr != nil {
		return nil, fnErr
	}
	return corrupt, readErr
}

// AuditState is what a batch audit reads of one session's sessions row.
type AuditState struct {
	Header   session.Header
	Verified bool
	// Recorded: an import recorded a torn tail or damage for the log.
	Recorded bool
	// seen: the event stream had rows of the log.
	seen bool
}

// AuditEach is a store's backend.BatchAuditor over what only the store can
// read: states, the sessions row of every id (an id without one is
// unknown); events, one stream of every event row of ids by (session_id,
// seq), passed to StreamLogs with send; and one, the store's own Audit of a
// single log, which judges the logs an import recorded as torn or damaged
// and those whose rows are corrupt before their last turn/end. A log with
// no rows is judged as empty.
func AuditEach(ctx context.Context, ids []string, states map[string]*AuditState,
	events func(send func(id string, log []Row) error) error,
	one func(id string) (*backend.AuditRead, error), fn func(*backend.AuditRead) error) error {
	var aside []string
	for _, id := range ids {
		st, ok := states[id]
		switch {
		case !ok:
			return NotFound(id)
		case st.Recorded:
			aside = append(aside, id)
		}
	}
	corrupt, err := AuditBatch(ctx, func(send func(LogRows) error) error {
		return events(func(id string, log []Row) error {
			st := states[id]
			st.seen = true
			if st.Recorded {
				return nil
			}
			return send(LogRows{Header: st.Header, Verified: st.Verified, Rows: log})
		})
	}, fn)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if st := states[id]; !st.seen && !st.Recorded {
			a, _ := AuditRows(st.Header, nil, st.Verified)
			if err := fn(a); err != nil {
				return err
			}
		}
	}
	for _, id := range append(aside, corrupt...) {
		a, err := one(id)
		if err != nil {
			return err
		}
		if err := fn(a); err != nil {
			return err
		}
	}
	return nil
}
