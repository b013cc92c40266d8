package render

import (
	"strconv"
	"strings"

	"github.com/dsh-project/dsh/internal/logdamage"
	"github.com/dsh-project/dsh/internal/usage"
)

// UsageView says how dsh usage's records are printed for people.
type UsageView struct {
	// Subtree adds the subtree rollup columns (a --parent report).
	Subtree bool
	// ByModel prints one line per session and model instead of one per
	// session.
	ByModel bool
}

// usageLine is one line of the table: a record, or one of its models.
type usageLine struct {
	r       usage.Record
	model   *string
	own     usage.TotalsRecord
	subtree usage.TotalsRecord
}

// Usage prints dsh usage's records: JSON one array, JSONL one record per
// line (both whatever the view), a table or TSV one line per record (per
// record and model with ByModel), a tree the records under their
// parentId. Every stored string is escaped for people.
func (p *Printer) Usage(records []usage.Record, view UsageView) error {
	switch p.opts.Format {
	case JSON, JSONL:
		l := NewList[usage.Record](p, nil)
		for _, r := range records {
			if err := l.Add(r); err != nil {
				return err
			}
		}
		return l.Close()
	case Tree:
		return p.usageTree(records, view)
	}
	cols := []Column[usageLine]{{Header: "ID", Value: func(l usageLine) string { return l.r.ID }}}
	if view.Subtree {
		cols = append(cols, Column[usageLine]{Header: "DEPTH", Value: func(l usageLine) string { return itoa(l.r.Depth) }})
	}
	if view.ByModel {
		cols = append(cols, Column[usageLine]{Header: "MODEL", Value: func(l usageLine) string { return modelName(*l.model) }})
	}
	cols = append(cols, totalsColumns("", func(l usageLine) usage.TotalsRecord { return l.own })...)
	if view.Subtree {
		cols = append(cols, totalsColumns("SUBTREE_", func(l usageLine) usage.TotalsRecord { return l.subtree })...)
	}
	cols = append(cols, Column[usageLine]{Header: "NOTE", Value: func(l usageLine) string { return usageNote(l.r) }})
	l := NewList(p, cols)
	for _, r := range records {
		for _, line := range usageLines(r, view) {
			if err := l.Add(line); err != nil {
				return err
			}
		}
	}
	return l.Close()
}

func totalsColumns(prefix string, of func(usageLine) usage.TotalsRecord) []Column[usageLine] {
	n := func(v int64) string { return strconv.FormatInt(v, 10) }
	return []Column[usageLine]{
		{Header: prefix + "MESSAGES", Value: func(l usageLine) string { return n(of(l).Messages) }},
		{Header: prefix + "INPUT", Value: func(l usageLine) string { return n(of(l).InputTokens) }},
		{Header: prefix + "OUTPUT", Value: func(l usageLine) string { return n(of(l).OutputTokens) }},
		{Header: prefix + "CACHE_READ", Value: func(l usageLine) string { return n(of(l).CacheReadTokens) }},
		{Header: prefix + "REASONING", Value: func(l usageLine) string { return n(of(l).ReasoningTokens) }},
	}
}

// usageLines is a record's lines: one, or with ByModel one per model of
// its own or subtree totals (a record without any: one line, model "-").
func usageLines(r usage.Record, view UsageView) []usageLine {
	whole := usageLine{r: r, own: r.Own}
	if r.Subtree != nil {
		whole.subtree = *r.Subtree
	}
	if !view.ByModel {
		return []usageLine{whole}
	}
	var names []string
	own := map[string]usage.TotalsRecord{}
	sub := map[string]usage.TotalsRecord{}
	for _, m := range r.Models {
		own[m.Model] = m.TotalsRecord
		names = append(names, m.Model)
	}
	for _, m := range r.SubtreeModels {
		sub[m.Model] = m.TotalsRecord
		if _, ok := own[m.Model]; !ok {
			names = append(names, m.Model)
		}
	}
	if len(names) == 0 {
		none := "-"
		whole.model = &none
		return []usageLine{whole}
	}
	lines := make([]usageLine, 0, len(names))
	for _, name := range names {
		name := name
		lines = append(lines, usageLine{r: r, model: &name, own: own[name], subtree: sub[name]})
	}
	return lines
}

// modelName shows the events that name no model.
func modelName(m string) string {
	if m == "" {
		return "(none)"
	}
	return m
}

// usageNote says why a record is not a whole log's sum; "-" when it is.
func usageNote(r usage.Record) string {
	var parts []string
	if r.Listed != nil && !*r.Listed {
		parts = append(parts, "not listed")
	}
	switch r.Damage {
	case logdamage.Torn, logdamage.Damaged:
		s := string(r.Damage)
		if r.FromSeq != nil {
			s += " from seq " + strconv.FormatInt(*r.FromSeq, 10)
		}
		parts = append(parts, s+", prefix counted")
	case "":
	default:
		parts = append(parts, string(r.Damage))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, "; ")
}

// usageTree draws the records under their parentId, the first record the
// root: id, then in=, out=, cache=, reasoning= of its own and, when it has
// one, of its subtree, then the note.
func (p *Printer) usageTree(records []usage.Record, view UsageView) error {
	if len(records) == 0 {
		return nil
	}
	g := asciiTree
	if p.opts.UTF8 {
		g = unicodeTree
	}
	children := map[string][]int{}
	for i := 1; i < len(records); i++ {
		children[records[i].ParentID] = append(children[records[i].ParentID], i)
	}
	var b strings.Builder
	line := func(r usage.Record) {
		b.WriteString(Escape(r.ID))
		b.WriteString("  ")
		b.WriteString(treeTotals(r.Own))
		if r.Subtree != nil && view.Subtree {
			b.WriteString("  subtree ")
			b.WriteString(treeTotals(*r.Subtree))
		}
		if note := usageNote(r); note != "-" {
			b.WriteString("  ")
			b.WriteString(p.style("("+Escape(note)+")", yellow))
		}
		b.WriteByte('\n')
	}
	drawn := map[int]bool{0: true}
	var draw func(id, indent string)
	draw = func(id, indent string) {
		kids := children[id]
		for k, i := range kids {
			if drawn[i] {
				continue
			}
			drawn[i] = true
			b.WriteString(indent)
			next := indent + g.pipe
			if k == len(kids)-1 {
				b.WriteString(g.last)
				next = indent + g.blank
			} else {
				b.WriteString(g.branch)
			}
			line(records[i])
			draw(records[i].ID, next)
		}
	}
	if !view.Subtree {
		// Sessions named one by one: a line each, no tree.
		for _, r := range records {
			line(r)
		}
	} else {
		line(records[0])
		draw(records[0].ID, "")
	}
	_, err := p.w.Write([]byte(b.String()))
	return err
}

func treeTotals(t usage.TotalsRecord) string {
	return "in=" + strconv.FormatInt(t.InputTokens, 10) + " out=" + strconv.FormatInt(t.OutputTokens, 10) +
		" cache=" + strconv.FormatInt(t.CacheReadTokens, 10) + " reasoning=" + strconv.FormatInt(t.ReasoningTokens, 10)
}
