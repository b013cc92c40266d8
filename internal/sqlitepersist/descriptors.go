package sqlitepersist

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/dsh-project/dsh/internal/jsjson"
	"github.com/dsh-project/dsh/internal/session"
)

// subagentDescriptorVersionLater is subagent.DescriptorVersionLater (this
// package cannot import subagent): the descriptor version DSH 0.1.0-rc.8
// does not read.
const subagentDescriptorVersionLater = 3

// DescriptorsAt returns, for each session id of at, the data of its event
// at the given seq when that event is a subagent/descriptor, in one
// statement over the events' primary key (backend.DescriptorReader: the
// 0.1.0-rc.8 listing checks the descriptors dsh's folds name). Ids whose
// event is missing, of another type or without data are left out, and so
// are payloads whose version member is not the number 3 (or that are not
// JSON): the listing only asks which of them are version 3, and leaving
// the others in SQLite keeps the common answer, none, one cheap statement.
func (s *Store) DescriptorsAt(ctx context.Context, at map[string]int64) (map[string]json.RawMessage, error) {
	out := make(map[string]json.RawMessage, len(at))
	if len(at) == 0 {
		return out, nil
	}
	what := fmt.Sprintf("read the descriptors of %d sessions", len(at))
	// One JSON object {id: seq} as the only parameter: json_each walks it
	// and each member probes the events' primary key.
	obj := make([]byte, 0, 64*len(at))
	obj = append(obj, '{')
	for id, seq := range at {
		if len(obj) > 1 {
			obj = append(obj, ',')
		}
		obj = jsjson.AppendString(obj, id)
		obj = append(obj, ':')
		obj = strconv.AppendInt(obj, seq, 10)
	}
	obj = append(obj, '}')
	// CROSS JOIN keeps json_each the outer loop: each member is one probe
	// of the primary key, never a scan of the descriptor index.
	rows, err := s.Querier().QueryContext(ctx, `SELECT e.session_id, e.data FROM json_each(?1) j
		CROSS JOIN events e ON e.session_id = j.key AND e.seq = j.value
		WHERE e.type = ?2 AND e.data IS NOT NULL
			AND CASE WHEN json_valid(e.data) THEN json_type(e.data, '$.version') IN ('integer', 'real') AND json_extract(e.data, '$.version') = ?3 END`,
		string(obj), session.TypeDescriptor, subagentDescriptorVersionLater)
	if err != nil {
		return nil, s.storeError(err, what)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			id   string
			data string
		)
		if err := rows.Scan(&id, &data); err != nil {
			return nil, s.storeError(err, what)
		}
		out[id] = json.RawMessage(data)
	}
	if err := rows.Err(); err != nil {
		return nil, s.storeError(err, what)
	}
	return out, nil
}
