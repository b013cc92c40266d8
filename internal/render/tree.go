package render

import (
	"strings"

	"github.com/dsh-project/dsh/internal/subagent"
)

// Tree is a listing drawn for people as an indented tree under its parent,
// like pstree or tree: one line per row, box-drawing characters when the
// locale is UTF-8 (Options.UTF8), ASCII otherwise.
const Tree Format = "tree"

// treeGlyphs are the connectors of one drawing style.
type treeGlyphs struct{ branch, last, pipe, blank string }

var (
	unicodeTree = treeGlyphs{branch: "├── ", last: "└── ", pipe: "│   ", blank: "    "}
	asciiTree   = treeGlyphs{branch: "|-- ", last: "`-- ", pipe: "|   ", blank: "    "}
)

// State colours: a child being worked on stands out, damage is red or
// yellow, a settled child is plain.
const (
	green  sgr = "32"
	red    sgr = "31"
	yellow sgr = "33"
)

// ListingTree prints rows as a tree under root. Rows come in the listing's
// pre-order; a descendants row is placed by its depth, a children row is at
// depth 1. A row whose parent was filtered out keeps its depth, so the
// indentation still says how far below root it is. Each line is the id, the
// row's state (running, inactive, corrupt, unavailable), then for a child
// its mode and label; every stored string is escaped.
func (p *Printer) ListingTree(root string, rows []subagent.Row) error {
	g := asciiTree
	if p.opts.UTF8 {
		g = unicodeTree
	}
	depth := func(r subagent.Row) int { return max(r.Depth, 1) }
	var b strings.Builder
	b.WriteString(Escape(root))
	b.WriteByte('\n')
	// lastAt[k] says whether the latest row drawn at depth k is the last of
	// its siblings, i.e. whether depth k's vertical line has ended.
	lastAt := map[int]bool{}
	for i, r := range rows {
		d := depth(r)
		last := true
		for _, next := range rows[i+1:] {
			if nd := depth(next); nd <= d {
				last = nd < d
				break
			}
		}
		for k := 1; k < d; k++ {
			if ended, seen := lastAt[k]; seen && !ended {
				b.WriteString(g.pipe)
			} else {
				b.WriteString(g.blank)
			}
		}
		if last {
			b.WriteString(g.last)
		} else {
			b.WriteString(g.branch)
		}
		for k := range lastAt {
			if k > d {
				delete(lastAt, k)
			}
		}
		lastAt[d] = last
		b.WriteString(Escape(r.ID))
		b.WriteString("  ")
		b.WriteString(p.treeState(r))
		if r.Kind == subagent.KindChild {
			b.WriteString("  ")
			b.WriteString(string(r.Mode))
			if r.Label != nil {
				b.WriteString("  ")
				b.WriteString(Escape(*r.Label))
			}
		}
		b.WriteByte('\n')
	}
	_, err := p.w.Write([]byte(b.String()))
	return err
}

// treeState is the row's state word, coloured when colour is on.
func (p *Printer) treeState(r subagent.Row) string {
	if r.Kind == subagent.KindDiagnostic {
		code := red
		if r.Reason == subagent.ReasonUnavailable {
			code = yellow
		}
		return p.style(string(r.Reason), code)
	}
	if r.Activity == subagent.ActivityRunning {
		return p.style(string(r.Activity), green)
	}
	return string(r.Activity)
}
