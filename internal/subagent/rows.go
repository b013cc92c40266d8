package subagent

// RowKind distinguishes a child row from a diagnostic row.
type RowKind string

// Row kinds, as DSH's SubagentListEntry.kind.
const (
	KindChild      RowKind = "child"
	KindDiagnostic RowKind = "diagnostic"
)

// Activity of a child row.
type Activity string

// Activities: running = held by a live process; inactive = only in storage.
const (
	ActivityRunning  Activity = "running"
	ActivityInactive Activity = "inactive"
)

// Reason of a diagnostic row.
type Reason string

// Diagnostic reasons.
const (
	ReasonCorrupt     Reason = "corrupt"
	ReasonUnavailable Reason = "unavailable"
	// ReasonUnsupported is DSH 0.1.7's fifth outcome: a catalog entry of
	// mode "unknown" (only the 0.1.7 profile produces it; rc.8's listing
	// never does).
	ReasonUnsupported Reason = "unsupported"
)

// Rung names the step of the value ladder that decided a row.
type Rung string

// Ladder rungs.
const (
	RungLive  Rung = "live"  // the live holder's published snapshot
	RungCache Rung = "cache" // a projection checkpoint (cold, unseeded children only)
	RungRead  Rung = "read"  // a full read of the stored log and a fold
)

// Row is one catalog entry, DSH's SubagentListEntry plus placement in a
// descendants walk. Mode/Label/Activity/HasChildren are set on child rows,
// Reason on diagnostic rows.
type Row struct {
	Kind        RowKind
	ID          string
	Mode        Mode
	Label       *string
	Activity    Activity
	HasChildren bool
	Reason      Reason
	// ParentID and Depth are set in descendants scope (Depth > 0).
	ParentID string
	Depth    int
}

// Resolution is how the ladder resolved one candidate: its row (nil when the
// row is omitted, i.e. a running child still in its creation window), which
// rung decided, and for diagnostic or omitted rows the cause.
type Resolution struct {
	Row   *Row
	Rung  Rung
	Cause error
	// Identity is the identity the ladder found, before the own-suffix
	// check (nil when none was found).
	Identity *Identity
	// recordedFold marks a resolution taken from a registry fold the store
	// recorded (dsh's fold, not a read).
	recordedFold bool
}
