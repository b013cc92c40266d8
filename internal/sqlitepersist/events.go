package sqlitepersist

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/dsh-project/dsh/internal/jsjson"
	"github.com/dsh-project/dsh/internal/session"
)

// eventColumns are the events columns storedlog.Row.Targets scans, in order.
const eventColumns = "seq, type, time, data, source_event_seqs, surface_op, ignorable, unknown_keys"

// insertEvents writes events as rows of session id, exactly as given. q is
// a write transaction's stmtCache, so each INSERT is compiled once per
// transaction.
//
// The rows go in multi-row INSERTs of insertEventsChunk rows, then halving
// chunks for the rest (at most one statement of each power-of-two size,
// all cached), because FTS5 writes its pending terms to disk at the start
// of every statement of a transaction (migration 0013's index, kept by a
// trigger on events): one statement per event made a new index segment
// per message, and the merges of those segments were most of an import's
// search cost. A statement fails whole, so an error names the chunk's
// first and last seq.
func insertEvents(ctx context.Context, q Querier, id string, events []session.Event) error {
	for n := insertEventsChunk; len(events) > 0; n /= 2 {
		for len(events) >= n {
			chunk := events[:n]
			events = events[n:]
			args := make([]any, 0, n*eventParams)
			for _, e := range chunk {
				args = append(args, id, e.Seq, e.Type, e.Time, rawOrNull(e.Data),
					sourceSeqsColumn(e), rawOrNull(e.SurfaceOp), boolInt(e.Ignorable), unknownKeysColumn(e.UnknownKeys))
			}
			if _, err := q.ExecContext(ctx, insertEventsSQL[n], args...); err != nil {
				if n == 1 {
					return fmt.Errorf("insert event seq %d of session %q: %w", chunk[0].Seq, id, err)
				}
				return fmt.Errorf("insert events seq %d to %d of session %q: %w", chunk[0].Seq, chunk[n-1].Seq, id, err)
			}
		}
	}
	return nil
}

// insertEventsChunk is the most rows one INSERT writes: a power of two, its
// 9 parameters a row far below SQLite's 32,766.
const insertEventsChunk = 64

// eventParams are the parameters of one row: session_id and eventColumns.
const eventParams = 9

// insertEventsSQL[n] is the INSERT of n rows, for each power of two n up to
// insertEventsChunk.
var insertEventsSQL = func() map[int]string {
	m := make(map[int]string)
	row := "(?" + strings.Repeat(", ?", eventParams-1) + ")"
	for n := 1; n <= insertEventsChunk; n *= 2 {
		m[n] = "INSERT INTO events (session_id, " + eventColumns + ") VALUES " + row + strings.Repeat(", "+row, n-1)
	}
	return m
}()

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
