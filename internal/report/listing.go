package report

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/dsh-project/dsh/internal/corpus"
	"github.com/dsh-project/dsh/internal/subagent"
)

// Listing is a parent's listing as `dsh list` reads it.
type Listing struct {
	// Rows are the listing's rows in DSH's order.
	Rows []subagent.Row
	// AgentRows are what -o agents prints: the rows, except under 0.1.7 in
	// children scope, where list_agents projects the parent's raw catalog
	// entries (a missing child is then a plain entry, not a diagnostic).
	AgentRows []subagent.Row
	// Catalog says the rows came from the parent's own catalog (0.1.7):
	// list_agents then names an idle child inactive.
	Catalog bool
}

// List reads parent's listing in scope through l, under l's profile.
func List(ctx context.Context, l *subagent.Lister, parent string, scope corpus.Scope) (Listing, error) {
	var out Listing
	var err error
	switch {
	case l.Profile.CatalogAuthority():
		var listing subagent.CatalogListing
		listing, err = l.ListCatalog(ctx, parent, scope)
		out.Rows, out.AgentRows, out.Catalog = listing.Rows, listing.Rows, true
		if scope == corpus.ScopeChildren {
			out.AgentRows = listing.Entries
		}
	case scope == corpus.ScopeDescendants:
		out.Rows, err = l.ListDescendants(ctx, parent)
	default:
		out.Rows, err = l.ListChildren(ctx, parent)
	}
	return out, err
}

// Filter keeps the rows of a listing whose state and mode were asked for.
// It only drops rows: the rows it keeps are exactly as DSH's listing
// produced them.
type Filter struct {
	States, Modes []string
}

var (
	// States are the states a row can be in; unsupported occurs only under
	// --dsh-compat 0.1.7.
	States = []string{"running", "inactive", "corrupt", "unavailable", "unsupported"}
	// Modes are the modes a child row can have; external occurs only under
	// --dsh-compat 0.1.7.
	Modes = []string{string(subagent.ModeContinuable), string(subagent.ModeOneShot), string(subagent.ModeExternal)}
)

// Check refuses values that no row can have, naming the flag or parameter
// (what) they came from.
func (f Filter) Check(states, modes string) error {
	for _, s := range f.States {
		if !slices.Contains(States, s) {
			return fmt.Errorf("%s: %q is not one of %s", states, s, strings.Join(States, ", "))
		}
	}
	for _, m := range f.Modes {
		if !slices.Contains(Modes, m) {
			return fmt.Errorf("%s: %q is not one of %s", modes, m, strings.Join(Modes, ", "))
		}
	}
	return nil
}

// State is a row's state as --state names it: a child's activity or a
// diagnostic's reason.
func State(r subagent.Row) string {
	if r.Kind == subagent.KindDiagnostic {
		return string(r.Reason)
	}
	return string(r.Activity)
}

// Apply returns the rows that pass, in their order.
func (f Filter) Apply(rows []subagent.Row) []subagent.Row {
	if len(f.States) == 0 && len(f.Modes) == 0 {
		return rows
	}
	var kept []subagent.Row
	for _, r := range rows {
		if len(f.States) > 0 && !slices.Contains(f.States, State(r)) {
			continue
		}
		if len(f.Modes) > 0 && (r.Kind != subagent.KindChild || !slices.Contains(f.Modes, string(r.Mode))) {
			continue
		}
		kept = append(kept, r)
	}
	return kept
}
