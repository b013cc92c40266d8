package sqlstore

import (
	"context"
	"database/sql"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/storedlog"
)

// ColdVerdicts implements backend.ColdVerdictReader: the read failures
// recorded by the imports that stored these logs and the registry folds
// recorded by their writers (migration 0007), in one query.
func (c Core) ColdVerdicts(ctx context.Context, ids []string) (map[string]backend.ColdVerdict, error) {
	out := map[string]backend.ColdVerdict{}
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := c.db.Q().Query(ctx, `SELECT id, read_failure, registry_fold FROM sessions
		WHERE `+c.d.InIDs("id")+` AND (read_failure IS NOT NULL OR registry_fold IS NOT NULL)`, c.d.IDs(ids))
	if err != nil {
		return nil, c.db.StoreError(err, "read recorded cold verdicts")
	}
	defer rows.Close()
	for rows.Next() {
		var (
			id            string
			failure, fold sql.NullString
		)
		if err := rows.Scan(&id, &failure, &fold); err != nil {
			return nil, c.db.StoreError(err, "read recorded cold verdicts")
		}
		var foldText []byte
		if fold.Valid {
			foldText = []byte(fold.String)
		}
		if v := storedlog.RecordedVerdict(id, failure.String, failure.Valid, foldText); v != nil {
			out[id] = *v
		}
	}
	if err := rows.Err(); err != nil {
		return nil, c.db.StoreError(err, "read recorded cold verdicts")
	}
	return out, nil
}
