package pgstore

import (
	"bytes"
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

// ChildListingCold implements backend.ColdChildListingReader: ChildListing,
// then InspectColdBatch of every child without a checkpoint record, every
// seeded child and every child whose record lacks mark, in one snapshot
// (SQLite joins the reads into one statement). The children are held until
// the batch is read, as a listing holds them anyway.
func (s *Store) ChildListingCold(ctx context.Context, parent string, types []string, mark string, fn func(backend.ListedChild) error) error {
	return s.view(ctx, func(view *Store) error {
		var (
			kids []backend.ListedChild
			cold []string
		)
		err := view.ChildListing(ctx, parent, func(c backend.ListedChild) error {
			kids = append(kids, c)
			if c.Checkpoint == nil || c.Header.IsSeeded() || !bytes.Contains(c.Checkpoint, []byte(mark)) {
				cold = append(cold, c.Header.ID)
			}
			return nil
		})
		if err != nil {
			return err
		}
		verdicts, logs, err := view.InspectColdBatch(ctx, cold, types)
		if err != nil {
			return err
		}
		for _, c := range kids {
			if v, ok := verdicts[c.Header.ID]; ok {
				c.Cold = &backend.ListedColdRead{Verdict: &v}
			} else if in, ok := logs[c.Header.ID]; ok {
				c.Cold = &backend.ListedColdRead{Log: in}
			}
			if err := fn(c); err != nil {
				return err
			}
		}
		return nil
	})
}
