package sqlitepersist

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/dsh-project/dsh/internal/jsjson"
	"github.com/dsh-project/dsh/internal/session"
)

// eventColumns are the events columns storedRow scans, in order.
const eventColumns = "seq, type, time, data, source_event_seqs, surface_op, ignorable, unknown_keys"

// storedRow is one events row as stored, before it is decoded.
type storedRow struct {
	seq         int64
	typ         string
	time        int64
	data        sql.NullString
	sourceSeqs  sql.NullString
	surfaceOp   sql.NullString
	ignorable   int64
	unknownKeys sql.NullString
}

func (r *storedRow) targets() []any {
	return []any{&r.seq, &r.typ, &r.time, &r.data, &r.sourceSeqs, &r.surfaceOp, &r.ignorable, &r.unknownKeys}
}

// raw is what a torn tail keeps of this row: its data text as stored.
func (r *storedRow) raw() []byte { return []byte(r.data.String) }

// decode turns the row into an event. It fails when a column holds something
// no write path produces: text that is not JSON where JSON is stored, an
// empty type, an out-of-range flag. (Whether the event is valid for DSH is
// the validator's question; this is whether it can be read at all.)
func (r *storedRow) decode() (session.Event, error) {
	e := session.Event{Type: r.typ, Seq: r.seq, Time: r.time}
	if r.typ == "" {
		return e, errors.New("empty type")
	}
	if r.data.Valid {
		if !json.Valid([]byte(r.data.String)) {
			return e, errors.New("data is not valid JSON")
		}
		e.Data = json.RawMessage(r.data.String)
	}
	if r.sourceSeqs.Valid {
		seqs := []int64{}
		if err := json.Unmarshal([]byte(r.sourceSeqs.String), &seqs); err != nil || seqs == nil {
			return e, fmt.Errorf("source_event_seqs %q is not a JSON array of integers", r.sourceSeqs.String)
		}
		e.SourceEventSeqs = seqs
		e.HasSourceEventSeqs = true
	}
	if r.surfaceOp.Valid {
		if !json.Valid([]byte(r.surfaceOp.String)) {
			return e, errors.New("surface_op is not valid JSON")
		}
		e.SurfaceOp = json.RawMessage(r.surfaceOp.String)
	}
	switch r.ignorable {
	case 0:
	case 1:
		e.Ignorable = true
	default:
		return e, fmt.Errorf("ignorable is %d, not 0 or 1", r.ignorable)
	}
	if r.unknownKeys.Valid {
		if err := json.Unmarshal([]byte(r.unknownKeys.String), &e.UnknownKeys); err != nil || e.UnknownKeys == nil {
			return e, fmt.Errorf("unknown_keys %q is not a JSON array of strings", r.unknownKeys.String)
		}
	}
	return e, nil
}

// insertEvents writes events as rows of session id, exactly as given.
func insertEvents(ctx context.Context, q Querier, id string, events []session.Event) error {
	if len(events) == 0 {
		return nil
	}
	stmt, err := prepare(ctx, q, `INSERT INTO events (session_id, `+eventColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return err
	}
	defer stmt.Close()
	for _, e := range events {
		_, err := stmt.ExecContext(ctx, id, e.Seq, e.Type, e.Time, rawOrNull(e.Data),
			sourceSeqsColumn(e), rawOrNull(e.SurfaceOp), boolInt(e.Ignorable), unknownKeysColumn(e.UnknownKeys))
		if err != nil {
			return fmt.Errorf("insert event seq %d of session %q: %w", e.Seq, id, err)
		}
	}
	return nil
}

// preparer is implemented by both *sql.DB and *sql.Tx.
type preparer interface {
	PrepareContext(ctx context.Context, query string) (*sql.Stmt, error)
}

func prepare(ctx context.Context, q Querier, query string) (*sql.Stmt, error) {
	p, ok := q.(preparer)
	if !ok {
		return nil, fmt.Errorf("querier %T cannot prepare statements", q)
	}
	return p.PrepareContext(ctx, query)
}

func rawOrNull(raw json.RawMessage) any {
	if raw == nil {
		return nil
	}
	return string(raw)
}

func sourceSeqsColumn(e session.Event) any {
	if !e.HasSourceEventSeqs {
		return nil
	}
	b := []byte{'['}
	for i, s := range e.SourceEventSeqs {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsjson.AppendInt(b, s)
	}
	return string(append(b, ']'))
}

func unknownKeysColumn(keys []string) any {
	if len(keys) == 0 {
		return nil
	}
	b := []byte{'['}
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsjson.AppendString(b, k)
	}
	return string(append(b, ']'))
}
