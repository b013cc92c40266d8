package diagnose

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/dshcompat"
	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/jsjson"
	"github.com/dsh-project/dsh/internal/projcache"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/subagent"
)

// sessionAudit collects one session's findings.
type sessionAudit struct {
	header   session.Header
	findings []Finding
}

func (s *sessionAudit) add(code Code, seq *int64, format string, args ...any) {
	s.findings = append(s.findings, Finding{
		Code:      code,
		Severity:  code.Severity(),
		SessionID: s.header.ID,
		ParentID:  s.header.ParentSession,
		Seq:       seq,
		Detail:    fmt.Sprintf(format, args...),
	})
}

func (s *sessionAudit) has(codes ...Code) bool {
	for _, f := range s.findings {
		if slices.Contains(codes, f.Code) {
			return true
		}
	}
	return false
}

func seqOf(n int64) *int64 { return &n }

// audit examines one session: its place in the tree, its lease, its raw
// log, its descriptors, its own catalog facts and its entry in its parent's
// catalog, its checkpoint, and whether resume would take the continuable
// child the catalog shows. It reads nothing but log (nil for an unknown
// session) and what its chunk read. It returns the session's own catalog
// when it has facts, whose children without a session the caller reports.
func (a *auditor) audit(ctx context.Context, it item, res *subagent.Resolution, log *backend.AuditRead, read chunkRead) (Report, *catalogView, error) {
	h := it.header
	s := &sessionAudit{header: h}
	r := Report{ID: h.ID, ParentID: h.ParentSession, CreatedAt: h.CreatedAt, RowKind: RowNotListed}
	if it.unknown {
		s.add(UnknownSession, nil, "no session with id %q in the store", h.ID)
		r.Findings = s.findings
		return r, nil, nil
	}
	if res != nil {
		r.Row = res.Row
		r.RowKind = rowKind(res)
	}
	_, live := a.leases.live[h.ID]
	checkParent(s, read.parents)
	if l, ok := a.leases.stale[h.ID]; ok {
		s.add(LeaseStale, nil, "lease of holder %s (pid %d on %s) expired at %s, last heartbeat %s: the holder crashed or hung; the child lists as inactive and the next start or resume takes the lease over",
			l.Holder, l.PID, l.Host, formatMillis(l.ExpiresAt), formatMillis(l.HeartbeatAt))
	}
	checkRawLog(s, log, res)
	if t := log.TextReplaced; t != nil {
		s.add(EventTextReplaced, seqOf(t.FirstSeq), "%d event(s) from seq %d on were read from text holding bytes that are not UTF-8: each ill-formed sequence reads as U+FFFD, as DSH reads it, and the original bytes are not kept", t.Events, t.FirstSeq)
	}
	// The facts of the readable prefix are judged even when the log goes
	// on to fail: each bad fact is damage of its own.
	own := judgeCatalog(log.Header, log.Events)
	if own.applies() {
		checkCatalogFacts(s, own)
	}
	// Its children's cross-check needs this catalog again, as a read of
	// the log gives it: a parent audited before its children is not read
	// twice.
	if log.ReadErr == nil {
		a.rememberCatalog(h.ID, own)
	} else {
		a.rememberCatalog(h.ID, nil)
	}
	if len(own.facts) == 0 {
		own = nil
	}
	if p := h.ParentSession; p != nil {
		if v := read.catalogs[*p]; v != nil {
			checkCatalogEntry(s, v, log)
		}
	}
	if log.ReadErr == nil {
		if len(log.Closers) > 0 && !live {
			checkInterruptedTurn(s, log)
		}
		if h.IsSubagent() {
			// The cut of the header read with the events: a later
			// format's cut is its tagged marker, which an enumerated
			// header cannot know.
			checkDescriptors(s, log.Events, log.Header.InheritedCut(), live, a.opts.Profile.Or() == dshcompat.RC8)
		}
	}
	if err := a.checkCache(ctx, s, log, res); err != nil {
		return r, nil, err
	}
	checkRegistryFold(s, a.reg, read.folds[h.ID], log)
	if !live && res != nil && res.Row != nil && res.Row.Kind == subagent.KindChild && res.Row.Mode == subagent.ModeContinuable {
		checkResumable(s, log)
	}
	explainRow(s, res)
	r.Findings = s.findings
	sortFindings(r.Findings)
	return r, own, nil
}

func rowKind(res *subagent.Resolution) RowKind {
	switch {
	case res.Row == nil:
		return RowOmitted
	case res.Row.Kind == subagent.KindChild:
		return RowChild
	case res.Row.Reason == subagent.ReasonUnavailable:
		return RowUnavailable
	case res.Row.Reason == subagent.ReasonUnsupported:
		return RowUnsupported
	}
	return RowCorrupt
}

// checkParent reports a missing parent and, for a subagent child, a
// delegation depth that is not its parent's plus one.
func checkParent(s *sessionAudit, parents map[string]*session.Header) {
	h := s.header
	if h.ParentSession == nil {
		if h.IsSubagent() {
			s.add(OrphanParent, nil, "origin is subagent but the header names no parentSession: no listing shows it and no parent can resume it")
		}
		return
	}
	parent := parents[*h.ParentSession]
	if parent == nil {
		what := "no parent can resume it"
		if h.IsSubagent() {
			what = "dsh list --parent still lists it, but no parent can resume it"
		}
		s.add(OrphanParent, nil, "parent session %q is not in the store: %s", *h.ParentSession, what)
		return
	}
	if h.IsSubagent() && h.Depth() != parent.Depth()+1 {
		s.add(DepthInconsistent, nil, "delegationDepth is %d but parent %q has delegationDepth %d (expected %d)",
			h.Depth(), parent.ID, parent.Depth(), parent.Depth()+1)
	}
}

// checkRawLog reports what the stored rows say before any reader hides it:
// holes in the seqs, a torn tail, and a log that cannot be read at all (with
// the seq and validation rule that failed).
func checkRawLog(s *sessionAudit, log *backend.AuditRead, res *subagent.Resolution) {
	for _, g := range log.Gaps {
		span := "seq " + strconv.FormatInt(g.From, 10) + " is"
		if g.To > g.From {
			span = fmt.Sprintf("seqs %d–%d are", g.From, g.To)
		}
		s.add(SeqGap, seqOf(g.From), "%s missing from the stored rows (the log jumps from seq %d to %d)", span, g.From-1, g.To+1)
	}
	if t := log.Torn; t != nil {
		s.add(LogTornTail, seqOf(t.FromSeq), "torn tail from seq %d (%s): readers cut the log there, and resume's repair deletes it", t.FromSeq, t.Reason)
	}
	var invalid *session.ValidationError
	switch {
	case log.ReadErr == nil:
	case dsherr.CodeOf(log.ReadErr) == dsherr.UnsupportedFormat && !errors.As(log.ReadErr, &invalid):
		// (An event type DSH does not know fails validation at a seq:
		// LOG_UNREADABLE with its rule, in place and in a store alike.)
		// A foreign corpus's session in a format dsh does not read: the
		// detail names the version and the file.
		s.add(UnsupportedFormat, nil, "%v%s", log.ReadErr, unreadableConsequence(res))
	default:
		seq, detail := readFailure(log.ReadErr)
		s.add(LogUnreadable, seq, "%s%s", detail, unreadableConsequence(res))
	}
}

// readFailure names the seq and rule of a failed read.
func readFailure(err error) (*int64, string) {
	var ve *session.ValidationError
	if errors.As(err, &ve) {
		if ve.Seq < 0 {
			return nil, fmt.Sprintf("header fails validation (rule %s): %s", ve.Rule, ve.Msg)
		}
		return seqOf(ve.Seq), fmt.Sprintf("event at seq %d fails validation (rule %s): %s", ve.Seq, ve.Rule, ve.Msg)
	}
	var ce *backend.CorruptRowError
	if errors.As(err, &ce) {
		return seqOf(ce.Seq), fmt.Sprintf("committed row at seq %d cannot be read: %s", ce.Seq, ce.Reason)
	}
	return nil, err.Error()
}

func unreadableConsequence(res *subagent.Resolution) string {
	switch {
	case res == nil:
		return ""
	case res.Rung == subagent.RungCache:
		return "; dsh list still shows it from the projection checkpoint"
	case res.Rung == subagent.RungLive:
		return "; dsh list shows the live holder's snapshot"
	case res.Row != nil && res.Row.Kind == subagent.KindDiagnostic:
		return "; dsh list shows it as " + string(res.Row.Reason)
	case res.Row != nil:
		return "; dsh list still shows it, from its parent's catalog"
	}
	return "; dsh list shows it as unavailable"
}

// checkInterruptedTurn reports an open last turn of a session nobody holds.
func checkInterruptedTurn(s *sessionAudit, log *backend.AuditRead) {
	var start *int64
	for i := len(log.Events) - 1; i >= 0; i-- {
		if log.Events[i].Type == session.TypeTurnStart {
			start = seqOf(log.Events[i].Seq)
			break
		}
	}
	types := make([]string, len(log.Closers))
	for i, c := range log.Closers {
		types[i] = c.Type
	}
	where := "the last turn"
	if start != nil {
		where = fmt.Sprintf("the turn started at seq %d", *start)
	}
	s.add(TurnInterrupted, start, "%s has no turn/end: its process stopped mid-turn; resume first appends DSH's %d closing event%s (%s)",
		where, len(types), plural(len(types)), strings.Join(types, ", "))
}

// descriptorOutcome is how one descriptor event parses.
type descriptorOutcome struct {
	seq        int64
	desc       *subagent.Descriptor // nil when malformed or unsupported
	err        error                // the parse error of a malformed payload
	version    string               // the version of an unsupported payload
	unsupports bool
}

func (d descriptorOutcome) String() string {
	switch {
	case d.err != nil:
		return "malformed"
	case d.unsupports:
		return "unsupported version " + d.version
	case d.desc.Label == nil:
		return string(d.desc.Mode)
	}
	return string(d.desc.Mode) + " " + strconv.Quote(*d.desc.Label)
}

// parseDescriptorEvent parses e's payload as dsh's seeds rules read it
// (versions 2 and 3), or with rc8 as DSH 0.1.0-rc.8 does (version 2 only).
func parseDescriptorEvent(e session.Event, rc8 bool) descriptorOutcome {
	out := descriptorOutcome{seq: e.Seq}
	parse := subagent.ParseDescriptor
	if rc8 {
		parse = subagent.ParseDescriptorRC8
	}
	d, err := parse(e.Data)
	switch {
	case err != nil:
		out.err = err
	case d == nil:
		out.unsupports = true
		out.version = descriptorVersion(e.Data)
	default:
		out.desc = d
	}
	return out
}

// descriptorVersion is the version member of an unsupported payload (a
// valid JSON object: ParseDescriptor checked it), as written.
func descriptorVersion(data []byte) string {
	payload, ok := jsjson.SplitObject(data)
	if !ok {
		return "?"
	}
	version, _ := payload.Get("version")
	return string(version)
}

// checkDescriptors applies the catalog's and resume's descriptor rules to a
// subagent child's log. list folds the whole log, last descriptor wins;
// resume takes the first descriptor of the own suffix (seq >= the inherited
// cut). A running child without its own descriptor is in its creation
// window, which is not a finding. With rc8 the catalog's rules are DSH
// 0.1.0-rc.8's: version 2 only, and an identity from the inherited seed
// listed as the child's; resume's stay dsh's (versions 2 and 3).
func checkDescriptors(s *sessionAudit, events []session.Event, cut int64, live, rc8 bool) {
	var own, seed []descriptorOutcome
	var resumeFirst *descriptorOutcome
	for _, e := range events {
		if e.Type != session.TypeDescriptor {
			continue
		}
		d := parseDescriptorEvent(e, rc8)
		if subagent.OwnSuffix(e.Seq, cut) {
			if resumeFirst == nil {
				r := parseDescriptorEvent(e, false)
				resumeFirst = &r
			}
			own = append(own, d)
		} else {
			seed = append(seed, d)
		}
	}
	if len(own) == 0 {
		switch {
		case live:
		case len(seed) == 0:
			s.add(DescriptorMissing, nil, "no subagent/descriptor event in the log: dsh list shows the child as corrupt and resume refuses it (NOT_RESUMABLE)")
		case rc8:
			last := seed[len(seed)-1]
			listed := "dsh list shows the child as corrupt"
			if last.desc != nil {
				listed = "dsh list shows the ancestor's identity, " + last.String() + ", as DSH 0.1.0-rc.8 does (deviation #1)"
			}
			s.add(DescriptorAncestorOnly, seqOf(last.seq), "the only descriptor%s (seq%s %s) %s in the inherited seed (seedLength %d), copied from an ancestor: %s, and resume refuses it (NOT_RESUMABLE)",
				plural(len(seed)), plural(len(seed)), seqList(seed), isAre(len(seed)), cut, listed)
		default:
			last := seed[len(seed)-1]
			s.add(DescriptorAncestorOnly, seqOf(last.seq), "the only descriptor%s (seq%s %s) %s in the inherited seed (seedLength %d), copied from an ancestor: dsh list shows the child as corrupt (DSH 0.1.0-rc.8 listed the ancestor's identity, %s) and resume refuses it (NOT_RESUMABLE)",
				plural(len(seed)), plural(len(seed)), seqList(seed), isAre(len(seed)), cut, last)
		}
		return
	}
	last := own[len(own)-1]
	for i, d := range own {
		var role []string
		if i == len(own)-1 {
			role = append(role, "it is the last descriptor, so dsh list shows the child as corrupt")
		}
		if i == 0 {
			switch r := resumeFirst; {
			case r.err != nil && d.err == nil:
				// Only under rc8: a version-3 payload rc.8 does not
				// support, which dsh resume reads and finds malformed.
				role = append(role, fmt.Sprintf("dsh resume, which reads versions 2 and 3, fails: %v", r.err))
			case r.err != nil:
				role = append(role, "resume fails with this error")
			case r.unsupports:
				role = append(role, "resume refuses the child (NOT_RESUMABLE)")
			default:
				// Only under rc8: a version-3 payload, which dsh
				// resume reads.
				role = append(role, "dsh resume, which reads versions 2 and 3, takes it")
			}
		}
		consequence := ""
		if len(role) > 0 {
			consequence = "; " + strings.Join(role, "; ")
		}
		switch {
		case d.err != nil:
			s.add(DescriptorMalformed, seqOf(d.seq), "%s%s", d.err, consequence)
		case d.unsupports && rc8:
			s.add(DescriptorUnsupportedVersion, seqOf(d.seq), "descriptor version %s is not supported by DSH 0.1.0-rc.8 (it reads version %d)%s", d.version, subagent.DescriptorVersion, consequence)
		case d.unsupports:
			s.add(DescriptorUnsupportedVersion, seqOf(d.seq), "descriptor version %s is not supported (dsh reads versions %d and %d)%s", d.version, subagent.DescriptorVersion, subagent.DescriptorVersionLater, consequence)
		}
	}
	if len(own) > 1 {
		verdict := "they agree"
		if resumeFirst.String() != last.String() {
			verdict = "they differ"
		}
		s.add(DescriptorMultiple, seqOf(own[1].seq), "%d descriptors in the own suffix (seqs %s): dsh list uses the last (seq %d: %s), resume the first (seq %d: %s); %s",
			len(own), seqList(own), last.seq, last, resumeFirst.seq, resumeFirst, verdict)
	}
}

func seqList(ds []descriptorOutcome) string {
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = strconv.FormatInt(d.seq, 10)
	}
	return strings.Join(parts, ", ")
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func isAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}

// checkCache compares the session's projection checkpoint with its header
// and, when the log reads, with a fold of the log (Verify judges the
// header too, so a readable log costs one lookup of the record).
func (a *auditor) checkCache(ctx context.Context, s *sessionAudit, log *backend.AuditRead, res *subagent.Resolution) error {
	if log.ReadErr != nil {
		look, err := a.cache.Lookup(ctx, log.Header)
		if err != nil {
			return err
		}
		switch look.Status {
		case projcache.Foreign:
			reportForeign(s, look.Reason)
		case projcache.Poisoned:
			reportPoisoned(s, look.Reason)
		}
		return nil
	}
	read := func(context.Context, string) (session.Header, []session.Event, error) {
		return log.Header, log.Events, nil
	}
	rep, err := a.cache.Verify(ctx, read, []string{s.header.ID})
	if err != nil {
		return err
	}
	served := ""
	if res != nil && res.Rung == subagent.RungCache {
		served = "; dsh list's row comes from this checkpoint"
	}
	for _, f := range rep.Findings {
		switch f.Kind {
		case projcache.KindForeign:
			reportForeign(s, f.Reason)
		case projcache.KindPoisoned:
			reportPoisoned(s, f.Reason)
		case projcache.KindMismatch, projcache.KindAhead, projcache.KindUnitFailed:
			s.add(CacheStale, nil, "the projection checkpoint disagrees with a fold of the log (unit %q: %s)%s", f.Key, f.Reason, served)
		}
	}
	return nil
}

// checkRegistryFold compares the registry fold the store recorded beside
// the log, which a listing uses in place of reading the log, with a fold
// of the log as read now.
func checkRegistryFold(s *sessionAudit, reg *projcache.Registry, recorded []byte, log *backend.AuditRead) {
	if recorded == nil {
		return
	}
	if why := subagent.FoldDisagreement(reg, recorded, log.Events, log.ReadErr); why != "" {
		s.add(CacheStale, nil, "the registry fold recorded beside the log disagrees with a fold of the log (%s); dsh list's row comes from it; dsh cache rebuild replaces it", why)
	}
}

func reportForeign(s *sessionAudit, reason string) {
	s.add(CacheForeign, nil, "the projection checkpoint belongs to another lifecycle of this id (%s): readers ignore it; dsh cache rebuild replaces it", reason)
}

func reportPoisoned(s *sessionAudit, reason string) {
	s.add(CachePoisoned, nil, "the projection checkpoint does not decode (%s): readers ignore it; dsh cache rebuild replaces it", reason)
}

// checkResumable runs resume's own refusal checks on a child the catalog
// shows as continuable, on behalf of its parent, against the same read.
func checkResumable(s *sessionAudit, log *backend.AuditRead) {
	var in *backend.Inspection
	if log.ReadErr == nil {
		in = &backend.Inspection{Header: log.Header, Events: log.Events, Torn: log.Torn, Closers: log.Closers, Verified: log.Verified}
	}
	parent := s.header.Parent()
	if _, err := subagent.CheckResume(s.header.ID, parent, in, log.ReadErr); err != nil {
		s.add(NotResumable, nil, "dsh list shows a continuable child, but dsh resume --parent %s refuses it: %s: %s",
			strconv.Quote(parent), dsherr.CodeOf(err), err)
	}
}

// rowCauses are the findings that explain a diagnostic row.
var rowCauses = []Code{
	DescriptorMissing, DescriptorMalformed, DescriptorUnsupportedVersion, DescriptorAncestorOnly,
	LogUnreadable, UnsupportedFormat, LifecycleMismatch, UnitFailed,
}

// explainRow makes sure a diagnostic row never goes unexplained: when no
// finding names its cause (the ladder decided on something the log audit
// does not see, such as a live holder's report), the ladder's cause is
// reported.
func explainRow(s *sessionAudit, res *subagent.Resolution) {
	if res == nil || res.Row == nil || res.Row.Kind != subagent.KindDiagnostic || s.has(rowCauses...) {
		return
	}
	switch {
	case errors.Is(res.Cause, subagent.ErrWitnessMismatch):
		s.add(LifecycleMismatch, nil, "the stored header differs from the enumerated (live) header on a lifecycle witness field: dsh list shows the child as corrupt")
	case errors.Is(res.Cause, subagent.ErrAncestorOnly):
		s.add(DescriptorAncestorOnly, nil, "the identity comes from the inherited seed: dsh list shows the child as corrupt")
	case errors.Is(res.Cause, subagent.ErrNoIdentity):
		s.add(DescriptorMissing, nil, "no valid identity: dsh list shows the child as corrupt")
	case res.Cause != nil:
		s.add(UnitFailed, nil, "%v: dsh list shows the child as %s", res.Cause, res.Row.Reason)
	}
}

func formatMillis(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z")
}
