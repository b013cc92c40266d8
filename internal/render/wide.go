package render

import (
	"strconv"

	"github.com/dsh-project/dsh/internal/corpus"
	"github.com/dsh-project/dsh/internal/leases"
	"github.com/dsh-project/dsh/internal/subagent"
)

// Wide is `dsh list -o wide`: the table, and for a running child the lease
// holder's host, pid and expiry.
const Wide Format = "wide"

// heldRow is a listing row with the live lease of its session, if any.
type heldRow struct {
	subagent.Row
	holder *leases.Row
}

// WideListing prints rows as the listing's table does (aligned with a
// header on a terminal, tab-separated lines without one on a pipe), each
// followed by HOST, PID and EXPIRES (UTC) of the live lease holders names
// for a running child; the cells are empty for every other row.
func (p *Printer) WideListing(rows []subagent.Row, scope corpus.Scope, holders map[string]leases.Row) error {
	table := *p
	table.opts.Format = Table
	cols := wideColumns(scope)
	l := NewList(&table, cols)
	for _, r := range rows {
		if err := l.Add(heldBy(r, holders)); err != nil {
			return err
		}
	}
	return l.Close()
}

// heldBy is r with its holder when r is a running child.
func heldBy(r subagent.Row, holders map[string]leases.Row) heldRow {
	item := heldRow{Row: r}
	if h, ok := holders[r.ID]; ok && r.Kind == subagent.KindChild && r.Activity == subagent.ActivityRunning {
		item.holder = &h
	}
	return item
}

func wideColumns(scope corpus.Scope) []Column[heldRow] {
	base := listingColumns
	if scope == corpus.ScopeDescendants {
		base = descendantColumns
	}
	cols := make([]Column[heldRow], 0, len(base)+3)
	for _, c := range base {
		cols = append(cols, Column[heldRow]{Header: c.Header, Value: func(r heldRow) string { return c.Value(r.Row) }})
	}
	held := func(f func(leases.Row) string) func(heldRow) string {
		return func(r heldRow) string {
			if r.holder == nil {
				return ""
			}
			return f(*r.holder)
		}
	}
	return append(cols,
		Column[heldRow]{Header: "HOST", Value: held(func(h leases.Row) string { return h.Host })},
		Column[heldRow]{Header: "PID", Value: held(func(h leases.Row) string { return strconv.Itoa(h.PID) })},
		Column[heldRow]{Header: "EXPIRES", Value: held(func(h leases.Row) string { return Millis(h.ExpiresAt) })},
	)
}
