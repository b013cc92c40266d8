package subagent

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/dsh-project/dsh/internal/corpus"
	"github.com/dsh-project/dsh/internal/dshcompat"
	"github.com/dsh-project/dsh/internal/session"
)

// The 0.1.0-rc.8 profile: DSH release 0.1.0-rc.8's listing exactly, the
// first revision of DSH's listing note (later-revision.md, left column):
//   - rung 1 lists a live holder's identity with no own-suffix check, and
//     every unit of the listing's registry is consulted for a live child;
//   - rung 2 serves every cold child, seeded or not, whose cached identity
//     lies in its own suffix (seq >= seedLength);
//   - rung 3 compares rc.8's seven witness fields (session.WitnessRC8) and
//     lists an identity folded from the inherited seed ("deviation #1");
//   - descriptor version 2 only: a version-3 payload is unsupported.
//
// dsh's own folds (a holder's published snapshot, a checkpoint record, a
// registry fold recorded beside a log) are made by the `subagent` unit
// under dsh's seeds rules, which read version 3 as valid. Such a fold's
// identity X comes from the last descriptor of the folded log (a later
// invalid descriptor would have reset it), and rc.8's fold of the same log
// is X when that descriptor is version 2 and null when it is version 3
// (every later descriptor is invalid under both rules). So under rc.8 an
// identity dsh folded is used only after the descriptor it names has been
// read (backend.DescriptorReader, one query per listing for all of them); a
// version-3 one makes it rc.8's null: a live child is omitted, a cached
// one is read (rung 3), a recorded fold lists corrupt. A cold read's own
// fold is judged from the events it read.

// RC8IdentityCache is an IdentityCache that holds records DSH 0.1.0-rc.8
// would not read (DSH's later per-record projection cache): under the rc.8
// profile the listing asks it for the cache rc.8 reads.
type RC8IdentityCache interface {
	IdentityCache
	RC8() IdentityCache
}

// rc8 reports whether the listing follows DSH 0.1.0-rc.8 exactly.
func (l *Lister) rc8() bool { return l.Profile.Or() == dshcompat.RC8 }

// liveOtherUnitsRC8 is the part of rung 1 that only rc.8 has: a failure of
// any registered unit makes a live row corrupt. The holder publishes the
// view of dsh's registry (the `subagent` unit); any other unit registered
// in this listing's registry is folded over the child's log as stored — a
// read, which only a registry with more units than dsh's own makes.
func (l *Lister) liveOtherUnitsRC8(ctx context.Context, rec corpus.Record) error {
	if len(l.Units.Keys()) <= 1 {
		return nil
	}
	_, events, err := l.Cold.ColdRead(ctx, rec.Header.ID, l.foldTypes())
	if err == nil {
		_, err = l.Units.Restore(events)
	}
	return err
}

// resolveFromCacheRC8 is rung 2 as rc.8 has it: every cold child is looked
// up, and a cached identity is final when it lies in the child's own
// suffix (seq >= seedLength, of the enumerated header).
func (l *Lister) resolveFromCacheRC8(ctx context.Context, recs []corpus.Record, cold []int, out []Resolution) []int {
	cache := l.Cache
	if c, ok := cache.(RC8IdentityCache); ok {
		cache = c.RC8()
	}
	headers := make([]session.Header, len(cold))
	for k, i := range cold {
		headers[k] = recs[i].Header
	}
	views, err := cache.CachedSubagentViews(ctx, headers)
	if err != nil {
		return cold
	}
	var pending []int
	for _, i := range cold {
		h := recs[i].Header
		if id, err := IdentityFromView(views[h.ID]); err == nil && id != nil && OwnSuffix(id.Seq, h.InheritedCut()) {
			out[i] = Resolution{Row: childRow(id, ActivityInactive), Rung: RungCache, Identity: id}
			continue
		}
		pending = append(pending, i)
	}
	return pending
}

// resolveReadRC8 is resolveRead as rc.8 has it: the seven-field witness,
// every registered unit folded, no own-suffix check, and a version-3
// descriptor unsupported.
func (l *Lister) resolveReadRC8(rec corpus.Record, stored session.Header, events []session.Event) Resolution {
	if stored.WitnessRC8() != rec.Header.WitnessRC8() {
		return Resolution{Row: diagnostic(ReasonCorrupt), Rung: RungRead, Cause: ErrWitnessMismatch}
	}
	view, err := l.Units.RestoreView(events, UnitKey)
	if err != nil {
		return Resolution{Row: diagnostic(ReasonCorrupt), Rung: RungRead, Cause: fmt.Errorf("%w: %v", ErrUnitFailed, err)}
	}
	res := resolveFolded(view, stored.InheritedCut(), false)
	if res.Identity != nil && laterDescriptorAt(events, res.Identity.Seq) {
		return Resolution{Row: diagnostic(ReasonCorrupt), Rung: RungRead, Cause: ErrNoIdentity}
	}
	return res
}

// checkServedRC8 checks, under rc.8, the identities rungs 1 and 2 took from
// dsh's folds against their descriptors: a version-3 one is rc.8's null,
// so a live child is omitted and a cached child joins pending (read in
// full). It returns pending, in candidate order.
func (l *Lister) checkServedRC8(ctx context.Context, recs []corpus.Record, pending []int, out []Resolution) ([]int, error) {
	if !l.rc8() || l.Descriptors == nil {
		return pending, nil
	}
	served := func(r Resolution) bool {
		return r.Identity != nil && r.Row != nil && r.Row.Kind == KindChild && (r.Rung == RungLive || r.Rung == RungCache)
	}
	later, err := l.laterDescriptors(ctx, recs, out, served)
	if err != nil || len(later) == 0 {
		return pending, err
	}
	for _, i := range later {
		if out[i].Rung == RungLive {
			out[i] = Resolution{Rung: RungLive, Cause: ErrNoIdentity}
			continue
		}
		out[i] = Resolution{}
		pending = append(pending, i)
	}
	slices.Sort(pending)
	return pending, nil
}

// checkFoldsRC8 checks, under rc.8, the identities taken from registry
// folds the store recorded: a version-3 descriptor makes the row corrupt,
// as rc.8's read of that log would.
func (l *Lister) checkFoldsRC8(ctx context.Context, recs []corpus.Record, out []Resolution) error {
	if !l.rc8() || l.Descriptors == nil {
		return nil
	}
	folded := func(r Resolution) bool {
		return r.recordedFold && r.Identity != nil && r.Row != nil && r.Row.Kind == KindChild
	}
	later, err := l.laterDescriptors(ctx, recs, out, folded)
	for _, i := range later {
		out[i] = Resolution{Row: diagnostic(ReasonCorrupt), Rung: RungRead, Cause: ErrNoIdentity}
	}
	return err
}

// laterDescriptors reads, in one go, the descriptors named by the
// identities of the resolutions that pick selects, and returns the indexes
// of those whose descriptor is a valid version-3 payload.
func (l *Lister) laterDescriptors(ctx context.Context, recs []corpus.Record, out []Resolution, pick func(Resolution) bool) ([]int, error) {
	at := map[string]int64{}
	var idx []int
	for i := range out {
		if pick(out[i]) {
			at[recs[i].Header.ID] = out[i].Identity.Seq
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		return nil, nil
	}
	data, err := l.Descriptors.DescriptorsAt(ctx, at)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ErrCancelled
		}
		return nil, fmt.Errorf("read the descriptors of dsh's folds: %w", err)
	}
	var later []int
	for _, i := range idx {
		if d, ok := data[recs[i].Header.ID]; ok && isLaterDescriptor(d) {
			later = append(later, i)
		}
	}
	return later, nil
}

// isLaterDescriptor reports whether data is a descriptor payload dsh's
// seeds rules read as a valid version 3, which DSH 0.1.0-rc.8 does not
// support.
func isLaterDescriptor(data json.RawMessage) bool {
	d, err := ParseDescriptor(data)
	return err == nil && d != nil && d.Version == DescriptorVersionLater
}

// laterDescriptorAt reports whether the event of events at seq is a
// version-3 descriptor (isLaterDescriptor).
func laterDescriptorAt(events []session.Event, seq int64) bool {
	for _, e := range events {
		if e.Seq == seq && e.Type == session.TypeDescriptor {
			return isLaterDescriptor(e.Data)
		}
	}
	return false
}
