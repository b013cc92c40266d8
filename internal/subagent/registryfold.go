package subagent

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/corpus"
	"github.com/dsh-project/dsh/internal/projcache"
	"github.com/dsh-project/dsh/internal/session"
)

// A registry fold is what a writer records beside a log it has just stored
// (backend.RegistryFoldRecorder) so that a listing resolves the child as a
// cold read of that log would (resolveRead) without reading it: the
// registry's units and state versions, then the outcome of folding them over
// the whole stored log, either the `subagent` view or "!" and the failure of
// a unit. Its text:
//
//	<key>@<version>[,<key>@<version>…]\n<view JSON> | !<failure>
//
// The store voids it on any change to the log, and a listing whose registry
// differs ignores it, so it always is the fold a cold read would compute.
// It is not a checkpoint record: those are served by DSH's cache rules (and
// may come from elsewhere), while this describes the log as stored.

// RecordRegistryFold records the outcome of fold, a fold of reg over the
// whole of session id's log as stored in tx, when the store keeps registry
// folds. Call it in the transaction that stored the log.
func RecordRegistryFold(ctx context.Context, tx backend.Store, reg *projcache.Registry, id string, fold *projcache.Fold) error {
	rec, ok := tx.(backend.RegistryFoldRecorder)
	if !ok {
		return nil
	}
	return rec.RecordRegistryFold(ctx, id, encodeRegistryFold(reg, fold))
}

func encodeRegistryFold(reg *projcache.Registry, fold *projcache.Fold) []byte {
	out := []byte(registrySignature(reg))
	out = append(out, '\n')
	snap, err := fold.Snapshot()
	if err != nil {
		return append(append(out, '!'), err.Error()...)
	}
	view := snap.Values[UnitKey]
	if len(view) == 0 {
		view = []byte("null")
	}
	return append(out, view...)
}

// registrySignature names every registered unit with its state version.
func registrySignature(reg *projcache.Registry) string {
	var b strings.Builder
	for i, key := range reg.Keys() {
		if i > 0 {
			b.WriteByte(',')
		}
		ver, _ := reg.StateVersion(key)
		b.WriteString(key)
		b.WriteByte('@')
		b.WriteString(strconv.Itoa(ver))
	}
	return b.String()
}

// resolveFold is resolveRead from a recorded registry fold of rec's log
// (read with rec's header, so the lifecycle witness holds); ok is false
// when the fold was recorded under another registry. own is resolveFolded's.
// The resolution is marked as folded by dsh: under 0.1.0-rc.8 its identity
// is checked against its descriptor's version (checkFoldsRC8).
func resolveFold(rec corpus.Record, signature string, fold []byte, own bool) (res Resolution, ok bool) {
	sig, outcome, found := bytes.Cut(fold, []byte("\n"))
	if !found || string(sig) != signature {
		return Resolution{}, false
	}
	if failure, failed := bytes.CutPrefix(outcome, []byte("!")); failed {
		return Resolution{Row: diagnostic(ReasonCorrupt), Rung: RungRead, Cause: fmt.Errorf("%w: %s", ErrUnitFailed, failure)}, true
	}
	res = resolveFolded(outcome, rec.Header.InheritedCut(), own)
	res.recordedFold = true
	return res, true
}

// FoldDisagreement says how a registry fold recorded beside a log differs
// from a fold of reg over that log as read now (events, or readErr when it
// does not read), or "" when it agrees or was recorded under another
// registry (a listing ignores those). A listing trusts a recorded fold as
// it would the log, so any difference is a wrong row: cache verify and
// diagnose both judge it here.
func FoldDisagreement(reg *projcache.Registry, recorded []byte, events []session.Event, readErr error) string {
	if !recordedUnder(reg, recorded) {
		return ""
	}
	if readErr != nil {
		return fmt.Sprintf("a registry fold is recorded but the log cannot be read: %v", readErr)
	}
	f := reg.NewFold()
	f.Apply(events...)
	if want := encodeRegistryFold(reg, f); !bytes.Equal(recorded, want) {
		return fmt.Sprintf("recorded %q, the log folds to %q", recorded, want)
	}
	return ""
}

// recordedUnder reports whether fold was recorded under reg's units and
// state versions: the only folds a listing uses.
func recordedUnder(reg *projcache.Registry, fold []byte) bool {
	sig, _, found := bytes.Cut(fold, []byte("\n"))
	return found && string(sig) == registrySignature(reg)
}
