package sqlitepersist

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/dsh-project/dsh/internal/jsjson"
	"github.com/dsh-project/dsh/internal/session"
)

// eventColumns are the events columns storedlog.Row.Targets scans, in order.
const eventColumns = "seq, type, time, data, source_event_seqs, surface_op, ignorable, unknown_keys"

// insertEvents writes events as rows of session id, exactly as given. q is
// a write transaction's stmtCache, so the INSERT is compiled once per
// transaction.
func insertEvents(ctx context.Context, q Querier, id string, events []session.Event) error {
	for _, e := range events {
		_, err := q.ExecContext(ctx, insertEventSQL, id, e.Seq, e.Type, e.Time, rawOrNull(e.Data),
			sourceSeqsColumn(e), rawOrNull(e.SurfaceOp), boolInt(e.Ignorable), unknownKeysColumn(e.UnknownKeys))
		if err != nil {
			return fmt.Errorf("insert event seq %d of session %q: %w", e.Seq, id, err)
		}
	}
	return nil
}

const insertEventSQL = `INSERT INTO events (session_id, ` + eventColumns + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`

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
