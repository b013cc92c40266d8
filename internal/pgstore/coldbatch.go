package pgstore

import (
	"context"

	"github.com/dsh-project/dsh/internal/backend"
)

// InspectColdBatch implements backend.ColdBatchReader: ColdVerdicts(ids),
// then InspectVerifiedTypes of the ids without a recorded verdict, in one
// snapshot (three queries; SQLite's one statement is a join PostgreSQL's
// planner gains nothing from), so that a cold listing's batch read is one
// call on either store.
func (s *Store) InspectColdBatch(ctx context.Context, ids []string, types []string) (map[string]backend.ColdVerdict, map[string]*backend.Inspection, error) {
	var (
		verdicts map[string]backend.ColdVerdict
		logs     map[string]*backend.Inspection
	)
	err := s.view(ctx, func(view *Store) error {
		var err error
		if verdicts, err = view.ColdVerdicts(ctx, ids); err != nil {
			return err
		}
		rest := make([]string, 0, len(ids)-len(verdicts))
		for _, id := range ids {
			if _, ok := verdicts[id]; !ok {
				rest = append(rest, id)
			}
		}
		logs, err = view.InspectVerifiedTypes(ctx, rest, types)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	return verdicts, logs, nil
}
