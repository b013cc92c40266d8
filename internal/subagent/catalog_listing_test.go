package subagent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/dsh-project/dsh/internal/corpus"
	"github.com/dsh-project/dsh/internal/dshcompat"
	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/session"
)

// The 0.1.7 listing (ListCatalog) on a real SQLite store: what only a dsh
// store has (leases, so running children) and what the CLI cannot observe
// (how often each session is read, cancellation, injected read failures).
// Every corpus kind and the rendered formats are covered in cmd/dsh.

// v4 stores a V4 session whose own events are the given catalog facts.
func (c *catalogue) v4(id string, createdAt int64, facts ...string) {
	c.t.Helper()
	h := session.Header{Version: 4, ID: id, CreatedAt: createdAt, Cwd: strp("/work")}
	events := make([]session.Event, len(facts))
	for i, f := range facts {
		events[i] = eventAt(int64(i), session.TypeCatalog, f)
	}
	if _, err := c.st.ImportSession(c.ctx, h, events, nil); err != nil {
		c.t.Fatalf("import %s: %v", id, err)
	}
}

func fact017(id string, ca int64, mode, label string) string {
	version := map[string]int{"unknown": 1, "external": 2}[mode]
	s := fmt.Sprintf(`{"version":%d,"childId":%q,"childCreatedAt":%d,"mode":%q`, version, id, ca, mode)
	if label != "" {
		s += fmt.Sprintf(`,"label":%q`, label)
	}
	return s + "}"
}

// rowText is a row in one short line, for comparisons.
func rowText(r Row) string {
	s := fmt.Sprintf("%s@%d<%s ", r.ID, r.Depth, r.ParentID)
	if r.Kind == KindDiagnostic {
		return s + string(r.Reason)
	}
	s += fmt.Sprintf("%s %s children=%v", r.Mode, r.Activity, r.HasChildren)
	if r.Label != nil {
		s += " " + *r.Label
	}
	return s
}

func rowsText(rows []Row) string {
	var out []string
	for _, r := range rows {
		out = append(out, rowText(r))
	}
	return strings.Join(out, "; ")
}

func (c *catalogue) lister017() *Lister {
	l := c.lister()
	l.Profile = dshcompat.V017
	return l
}

// §8 cases 1 and 19: activity is running exactly when a live dsh process
// holds the session; the entries (list_agents' children) carry it too.
func TestCatalogActivityFromLeases(t *testing.T) {
	c := newCatalog(t)
	c.v4("P", 1, fact017("B", 20, "continuable", "branch"), fact017("S", 10, "one-shot", "sibling"))
	c.v4("B", 20, fact017("L", 30, "continuable", "leaf"))
	c.v4("L", 30)
	c.v4("S", 10)
	c.holdLive(session.Header{Version: 4, ID: "B", CreatedAt: 20, Cwd: strp("/work")}, "")
	c.holdLive(session.Header{Version: 4, ID: "L", CreatedAt: 30, Cwd: strp("/work")}, "")
	listing, err := c.lister017().ListCatalog(c.ctx, "P", corpus.ScopeDescendants)
	if err != nil {
		t.Fatal(err)
	}
	want := "B@1<P continuable running children=true branch; L@2<B continuable running children=false leaf; S@1<P one-shot inactive children=false sibling"
	if got := rowsText(listing.Rows); got != want {
		t.Errorf("rows\n got %s\nwant %s", got, want)
	}
	if got := rowsText(listing.Entries); got != "B@1<P continuable running children=false branch; S@1<P one-shot inactive children=false sibling" {
		t.Errorf("entries %s", got)
	}
	rows, err := c.lister017().ListChildren(c.ctx, "P")
	if err != nil || rowsText(rows) != "B@1<P continuable running children=true branch; S@1<P one-shot inactive children=false sibling" {
		t.Errorf("ListChildren = %s, %v", rowsText(rows), err)
	}
}

// §8 case 8: each session is observed at most once, the root included, and
// never for an entry already visited.
func TestCatalogEachSessionReadOnce(t *testing.T) {
	c := newCatalog(t)
	c.v4("P", 1, fact017("B", 2, "continuable", "b"), fact017("L", 3, "continuable", "l"))
	c.v4("B", 2, fact017("L", 3, "continuable", "l"))
	c.v4("L", 3, fact017("P", 1, "continuable", "p"), fact017("B", 2, "continuable", "b"))
	l := c.lister017()
	rows, err := l.ListDescendants(c.ctx, "P")
	if err != nil {
		t.Fatal(err)
	}
	if got := rowsText(rows); got != "B@1<P continuable inactive children=true b; L@2<B continuable inactive children=true l" {
		t.Errorf("rows %s", got)
	}
	if n := c.reads.total(); n != 3 {
		t.Errorf("%d reads, want 3 (P, B, L once each)", n)
	}
	for _, id := range []string{"P", "B", "L"} {
		if n := c.reads.count(id); n != 1 {
			t.Errorf("%s read %d times", id, n)
		}
	}
}

// §8 case 20: external entries are leaves and are never read.
func TestCatalogExternalNeverRead(t *testing.T) {
	c := newCatalog(t)
	c.v4("P", 1, fact017("E", 2, "external", "external-child"), fact017("L", 3, "continuable", "l"))
	c.v4("L", 3, fact017("NE", 4, "external", ""))
	c.v4("E", 2, fact017("X", 9, "one-shot", "")) // a session named like the entry is not consulted
	rows, err := c.lister017().ListDescendants(c.ctx, "P")
	if err != nil {
		t.Fatal(err)
	}
	if got := rowsText(rows); got != "E@1<P external inactive children=false external-child; L@1<P continuable inactive children=true l; NE@2<L external inactive children=false" {
		t.Errorf("rows %s", got)
	}
	if c.reads.count("E") != 0 || c.reads.count("NE") != 0 || c.reads.total() != 2 {
		t.Errorf("reads: E %d, NE %d, total %d; want only P and L", c.reads.count("E"), c.reads.count("NE"), c.reads.total())
	}
}

// §4: a branch read failure becomes a diagnostic by its kind and hides the
// branch; a root read failure is the listing's error, unchanged.
func TestCatalogReadFailures(t *testing.T) {
	c := newCatalog(t)
	c.v4("P", 1, fact017("B", 2, "continuable", "b"), fact017("S", 3, "one-shot", ""))
	c.v4("B", 2, fact017("H", 4, "one-shot", ""))
	c.v4("S", 3)
	c.v4("H", 4)
	for _, tt := range []struct {
		err  error
		want Reason
	}{
		{&session.ValidationError{Seq: 1, Rule: "test", Msg: "broken"}, ReasonCorrupt},
		{dsherr.New(dsherr.InvalidLog, "recorded as unreadable"), ReasonCorrupt},
		{errors.New("disk on fire"), ReasonUnavailable},
	} {
		l := c.lister017()
		c.reads.after = func(_ context.Context, id string, err error) error {
			if id == "B" {
				return tt.err
			}
			return err
		}
		rows, err := l.ListDescendants(c.ctx, "P")
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("B@1<P %s; S@1<P one-shot inactive children=false", tt.want)
		if got := rowsText(rows); got != want {
			t.Errorf("%v: rows %s, want %s", tt.err, got, want)
		}
		if c.reads.count("H") != 0 {
			t.Errorf("%v: the hidden branch was read", tt.err)
		}
	}
	l := c.lister017()
	boom := errors.New("store gone")
	c.reads.after = func(_ context.Context, id string, err error) error {
		if id == "P" {
			return boom
		}
		return err
	}
	if _, err := l.ListChildren(c.ctx, "P"); !errors.Is(err, boom) {
		t.Errorf("root failure = %v, want it unchanged", err)
	}
}

// §4: cancellation before the listing and between reads stops it with
// CANCELLED and no rows.
func TestCatalogCancelled(t *testing.T) {
	c := newCatalog(t)
	c.v4("P", 1, fact017("B", 2, "continuable", "b"), fact017("S", 3, "one-shot", ""))
	c.v4("B", 2)
	c.v4("S", 3)
	ctx, cancel := context.WithCancel(c.ctx)
	cancel()
	if rows, err := c.lister017().ListDescendants(ctx, "P"); !errors.Is(err, ErrCancelled) || rows != nil {
		t.Errorf("pre-cancelled: %v, %v", rows, err)
	}
	ctx, cancel = context.WithCancel(c.ctx)
	defer cancel()
	l := c.lister017()
	c.reads.before = func(_ context.Context, id string) {
		if id == "B" {
			cancel()
		}
	}
	if rows, err := l.ListDescendants(ctx, "P"); !errors.Is(err, ErrCancelled) || rows != nil {
		t.Errorf("cancelled during a read: %v, %v", rows, err)
	}
	if c.reads.count("S") != 0 {
		t.Error("the walk went on after cancellation")
	}
}

// The seeds profile is untouched by catalog facts: the same store lists by
// rc.8's rules (no subagent headers here, so nothing).
func TestCatalogIgnoredBySeeds(t *testing.T) {
	c := newCatalog(t)
	c.v4("P", 1, fact017("B", 2, "continuable", "b"))
	c.v4("B", 2)
	rows, err := c.lister().ListChildren(c.ctx, "P")
	if err != nil || len(rows) != 0 {
		t.Errorf("seeds rows = %s, %v", rowsText(rows), err)
	}
}
