package subagent

import (
	"context"
	"fmt"

	"github.com/dsh-project/dsh/internal/jsjson"
	"github.com/dsh-project/dsh/internal/sqlitepersist"
)

// storeHeaders is a dsh store as the corpus's header source. On top of the
// store's indexed ChildrenOf and HasSubagentChild it answers hasChildren for
// a whole listing in one query (corpus.SubagentParentSource): one probe of
// the sessions_subagent_children index per id inside SQLite, instead of one
// statement per child.
type storeHeaders struct{ *sqlitepersist.Store }

func (s storeHeaders) SubagentParents(ctx context.Context, ids []string) (map[string]bool, error) {
	out := make(map[string]bool)
	if len(ids) == 0 {
		return out, nil
	}
	list := []byte{'['}
	for i, id := range ids {
		if i > 0 {
			list = append(list, ',')
		}
		list = jsjson.AppendString(list, id)
	}
	list = append(list, ']')
	rows, err := s.Querier().QueryContext(ctx, `SELECT DISTINCT parent_session FROM sessions
		WHERE origin = 'subagent' AND parent_session IN (SELECT value FROM json_each(?))`, string(list))
	if err != nil {
		return nil, fmt.Errorf("look up children of %d sessions: %w", len(ids), err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("look up children of %d sessions: %w", len(ids), err)
		}
		out[id] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("look up children of %d sessions: %w", len(ids), err)
	}
	return out, nil
}
