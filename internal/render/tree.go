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
// yellow, a settled child is plain; a line that is not a row is dim.
const (
	green  sgr = "32"
	red    sgr = "31"
	yellow sgr = "33"
	dim    sgr = "2"
)

// TreeGap is a session the tree draws without a row of its own, so that the
// rows below it hang under their real parent: an ordinary session that
// listDescendants walks through, or a row a filter removed.
type TreeGap struct {
	ID       string
	ParentID string
	// Why is what the line says in place of a state, e.g. "filtered out".
	Why string
}

// treeNode is one line of the tree: a row, or a gap (row nil).
type treeNode struct {
	id       string
	row      *subagent.Row
	why      string
	children []*treeNode
}

// ListingTree prints rows as a tree under root, each row under its
// parentId (a children row, which has none, under root). Rows come in the
// listing's pre-order, so siblings keep the listing's order. A row whose
// parent is not a row hangs under that parent's gap line (gaps, chained up
// to root or a row) or, when no gap names it, under root. Each row's line
// is the id, its state (running, inactive, corrupt, unavailable,
// unsupported), then for
// a child its mode and label; a gap's line is its id and why it has no
// row, dimmed when colour is on. Every stored string is escaped.
func (p *Printer) ListingTree(root string, rows []subagent.Row, gaps []TreeGap) error {
	g := asciiTree
	if p.opts.UTF8 {
		g = unicodeTree
	}
	top := &treeNode{id: root}
	gapOf := make(map[string]TreeGap, len(gaps))
	for _, gap := range gaps {
		gapOf[gap.ID] = gap
	}
	placed := map[string]*treeNode{}
	// attach returns the node rows with parent id hang under, creating the
	// gap lines up to root or a row placed before; a gap chain that loops
	// or names nothing known ends at root.
	var attach func(id string, seen map[string]bool) *treeNode
	attach = func(id string, seen map[string]bool) *treeNode {
		if id == "" || id == root {
			return top
		}
		if n, ok := placed[id]; ok {
			return n
		}
		gap, ok := gapOf[id]
		if !ok || seen[id] {
			return top
		}
		seen[id] = true
		up := attach(gap.ParentID, seen)
		n := &treeNode{id: id, why: gap.Why}
		up.children = append(up.children, n)
		placed[id] = n
		return n
	}
	for i := range rows {
		r := &rows[i]
		up := attach(r.ParentID, map[string]bool{})
		n := &treeNode{id: r.ID, row: r}
		up.children = append(up.children, n)
		placed[r.ID] = n
	}
	var b strings.Builder
	b.WriteString(Escape(root))
	b.WriteByte('\n')
	var draw func(n *treeNode, indent string)
	draw = func(n *treeNode, indent string) {
		for i, c := range n.children {
			last := i == len(n.children)-1
			b.WriteString(indent)
			next := indent + g.pipe
			if last {
				b.WriteString(g.last)
				next = indent + g.blank
			} else {
				b.WriteString(g.branch)
			}
			p.treeLine(&b, c)
			draw(c, next)
		}
	}
	draw(top, "")
	_, err := p.w.Write([]byte(b.String()))
	return err
}

// treeLine writes one node's text and its newline.
func (p *Printer) treeLine(b *strings.Builder, n *treeNode) {
	b.WriteString(Escape(n.id))
	b.WriteString("  ")
	r := n.row
	if r == nil {
		b.WriteString(p.style("("+Escape(n.why)+")", dim))
		b.WriteByte('\n')
		return
	}
	b.WriteString(p.treeState(*r))
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

// treeState is the row's state word, coloured when colour is on.
func (p *Printer) treeState(r subagent.Row) string {
	if r.Kind == subagent.KindDiagnostic {
		code := red
		if r.Reason == subagent.ReasonUnavailable || r.Reason == subagent.ReasonUnsupported {
			code = yellow
		}
		return p.style(string(r.Reason), code)
	}
	if r.Activity == subagent.ActivityRunning {
		return p.style(string(r.Activity), green)
	}
	return string(r.Activity)
}
