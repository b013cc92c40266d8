package pgstore

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/dsh-project/dsh/internal/session"
)

// DescriptorsAt returns, for each session id of at, the data of its event
// at the given seq when that event is a subagent/descriptor, in one
// statement over the events' primary key (backend.DescriptorReader: the
// 0.1.0-rc.8 listing checks the descriptors dsh's folds name). Ids whose
// event is missing, of another type or without data are left out; every
// descriptor is given whatever its version (the text may not be JSON the
// server would parse, so the caller judges it).
func (s *Store) DescriptorsAt(ctx context.Context, at map[string]int64) (map[string]json.RawMessage, error) {
	out := make(map[string]json.RawMessage, len(at))
	if len(at) == 0 {
		return out, nil
	}
	what := fmt.Sprintf("read the descriptors of %d sessions", len(at))
	ids := make([]string, 0, len(at))
	seqs := make([]int64, 0, len(at))
	for id, seq := range at {
		ids = append(ids, id)
		seqs = append(seqs, seq)
	}
	rows, err := s.q().Query(ctx, `SELECT e.session_id, e.data FROM unnest($1::text[], $2::bigint[]) AS j(id, seq)
		JOIN events e ON e.session_id = j.id AND e.seq = j.seq
		WHERE e.type = $3 AND e.data IS NOT NULL`, ids, seqs, session.TypeDescriptor)
	if err != nil {
		return nil, s.storeError(err, what)
	}
	defer rows.Close()
	for rows.Next() {
		var id, data string
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
