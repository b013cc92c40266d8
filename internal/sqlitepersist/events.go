package sqlitepersist

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/dsh-project/dsh/internal/jsjson"
	"github.com/dsh-project/dsh/internal/session"
)

// eventColumns are the events columns storedlog.Row.Targets scans, in order.
const eventColumns = "seq, type, time, data, source_event_seqs, surface_op, ignorable, unknown_keys"

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
