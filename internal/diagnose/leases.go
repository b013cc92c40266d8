package diagnose

import (
	"context"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/corpus"
)

// leaseIndex is the lease table as the audit sees it: the live records the
// catalog merges (exactly what `dsh list` reads) and the expired leases
// crashed holders left behind.
type leaseIndex struct {
	live  map[string]corpus.Live
	stale map[string]backend.Lease
}

func readLeases(ctx context.Context, view backend.LeaseReader) (leaseIndex, error) {
	live, err := view.LiveSessions(ctx)
	if err != nil {
		return leaseIndex{}, err
	}
	all, err := view.Leases(ctx)
	if err != nil {
		return leaseIndex{}, err
	}
	idx := leaseIndex{live: live, stale: map[string]backend.Lease{}}
	now, err := view.Now(ctx)
	if err != nil {
		return leaseIndex{}, err
	}
	for _, l := range all {
		if _, running := live[l.SessionID]; !running && l.Expired(now) {
			idx.stale[l.SessionID] = l
		}
	}
	return idx, nil
}

// liveSource serves the live records read once for the whole audit, so
// every listing it resolves sees the same ones.
func (idx leaseIndex) liveSource() corpus.LiveSource { return fixedLive(idx.live) }

type fixedLive map[string]corpus.Live

func (f fixedLive) LiveSessions(context.Context) (map[string]corpus.Live, error) { return f, nil }
