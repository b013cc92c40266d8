package render

import (
	"io"
	"strconv"
	"strings"

	"github.com/dsh-project/dsh/internal/corpus"
	"github.com/dsh-project/dsh/internal/jsjson"
	"github.com/dsh-project/dsh/internal/subagent"
)

// Agents is DSH's list_agents text, the format a model sees: one line per
// continuable child or diagnostic, or "(no subagents)".
const Agents Format = "agents"

// Listing prints subagent catalog rows in the printer's format:
//   - JSON: one array of DSH's SubagentListEntry objects, key order as DSH
//     builds them (AppendListEntry);
//   - JSONL: the same objects, one per line;
//   - Agents: ListAgentsText followed by one newline (the text itself has no
//     trailing newline);
//   - table and TSV: one line per row for people, every stored string
//     escaped.
//
// Agents text is DSH's exact bytes except on a terminal, where labels and ids
// are escaped as in every other human output: a stored label must not be able
// to drive the terminal.
func (p *Printer) Listing(rows []subagent.Row, scope corpus.Scope) error {
	switch p.opts.Format {
	case JSON:
		w := chunkWriter{w: p.w, b: make([]byte, 0, listChunk+listChunk/4)}
		w.b = append(w.b, '[')
		for i, r := range rows {
			if i > 0 {
				w.b = append(w.b, ',')
			}
			w.b = AppendListEntry(w.b, r, scope)
			w.flushFull()
		}
		w.b = append(w.b, "]\n"...)
		return w.flush()
	case JSONL:
		w := chunkWriter{w: p.w, b: make([]byte, 0, listChunk+listChunk/4)}
		for _, r := range rows {
			w.b = AppendListEntry(w.b, r, scope)
			w.b = append(w.b, '\n')
			w.flushFull()
		}
		return w.flush()
	case Agents:
		esc := func(s string) string { return s }
		if p.opts.TTY {
			esc = Escape
		}
		idle := "ready"
		if p.catalogStatuses {
			idle = string(subagent.ActivityInactive)
		}
		_, err := io.WriteString(p.w, listAgentsText(rows, scope, esc, idle)+"\n")
		return err
	}
	cols := listingColumns
	if scope == corpus.ScopeDescendants {
		cols = descendantColumns
	}
	l := NewList(p, cols)
	for _, r := range rows {
		if err := l.Add(r); err != nil {
			return err
		}
	}
	return l.Close()
}

// listChunk is how much JSON a listing gathers before writing it: the rows
// are all read already, so the output need not be built whole in memory
// (at thousands of rows that buffer, and its growth, was a good part of a
// listing's heap).
const listChunk = 64 << 10

// chunkWriter writes b to w whenever it holds listChunk bytes; the first
// write error is kept and returned by flush.
type chunkWriter struct {
	w   io.Writer
	b   []byte
	err error
}

func (c *chunkWriter) flushFull() {
	if len(c.b) >= listChunk {
		c.flush()
	}
}

func (c *chunkWriter) flush() error {
	if c.err == nil && len(c.b) > 0 {
		_, c.err = c.w.Write(c.b)
	}
	c.b = c.b[:0]
	return c.err
}

// AppendListEntry appends one row as DSH's SubagentListEntry JSON:
// {"kind":"child","id","mode","label"?,"activity","hasChildren"} or
// {"kind":"diagnostic","id","reason"}; in descendants scope both end with
// "parentId" and "depth".
func AppendListEntry(b []byte, r subagent.Row, scope corpus.Scope) []byte {
	b = append(b, `{"kind":`...)
	b = jsjson.AppendString(b, string(r.Kind))
	b = append(b, `,"id":`...)
	b = jsjson.AppendString(b, r.ID)
	if r.Kind == subagent.KindDiagnostic {
		b = append(b, `,"reason":`...)
		b = jsjson.AppendString(b, string(r.Reason))
	} else {
		b = append(b, `,"mode":`...)
		b = jsjson.AppendString(b, string(r.Mode))
		if r.Label != nil {
			b = append(b, `,"label":`...)
			b = jsjson.AppendString(b, *r.Label)
		}
		b = append(b, `,"activity":`...)
		b = jsjson.AppendString(b, string(r.Activity))
		if r.HasChildren {
			b = append(b, `,"hasChildren":true`...)
		} else {
			b = append(b, `,"hasChildren":false`...)
		}
	}
	if scope == corpus.ScopeDescendants {
		b = append(b, `,"parentId":`...)
		b = jsjson.AppendString(b, r.ParentID)
		b = append(b, `,"depth":`...)
		b = jsjson.AppendInt(b, int64(r.Depth))
	}
	return append(b, '}')
}

// ListAgentsText renders rows as DSH's list_agents tool text: diagnostics
// are kept, one-shot children are dropped, a continuable child shows its
// status and label. Lines are joined with "\n" and the text has no trailing
// newline; nothing left is "(no subagents)".
//
// DSH takes the status from its in-process Agent registry. Offline there is
// none; a child held by a live process (activity running) is [running] —
// working now — and every other child is [ready]: only in storage,
// resumable, not terminal. DSH's third status, idle (resident between
// turns), needs a resident agent and never occurs here.
func ListAgentsText(rows []subagent.Row, scope corpus.Scope) string {
	return listAgentsText(rows, scope, func(s string) string { return s }, "ready")
}

// UseCatalogStatuses makes the printer's list_agents text follow DSH 0.1.7:
// a child no live process holds is [inactive], not rc.8's [ready]. (Which
// rows reach the text is the listing's business: under 0.1.7 the children
// scope passes the parent's raw catalog entries.)
func (p *Printer) UseCatalogStatuses() { p.catalogStatuses = true }

// listAgentsText is ListAgentsText with every stored string (ids, labels)
// passed through esc, and idle as the status of a child no live process
// holds.
func listAgentsText(rows []subagent.Row, scope corpus.Scope, esc func(string) string, idle string) string {
	var b strings.Builder
	for _, r := range rows {
		if r.Kind == subagent.KindChild && r.Mode != subagent.ModeContinuable {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(esc(r.ID))
		if r.Kind == subagent.KindDiagnostic {
			b.WriteString(" [diagnostic: " + string(r.Reason) + "]")
		} else {
			b.WriteString(" [" + agentStatus(r, idle) + "]")
		}
		if scope == corpus.ScopeDescendants {
			b.WriteString(" parent=" + esc(r.ParentID) + " depth=" + itoa(r.Depth))
		}
		if r.Kind == subagent.KindChild {
			b.WriteString(" \u2014 " + esc(label(r)))
		}
	}
	if b.Len() == 0 {
		return "(no subagents)"
	}
	return b.String()
}

func agentStatus(r subagent.Row, idle string) string {
	if r.Activity == subagent.ActivityRunning {
		return "running"
	}
	return idle
}

func label(r subagent.Row) string {
	if r.Label == nil {
		return ""
	}
	return *r.Label
}

func itoa(n int) string { return strconv.Itoa(n) }

// status is a row's state in one word for people: the activity of a child,
// the reason of a diagnostic.
func status(r subagent.Row) string {
	if r.Kind == subagent.KindDiagnostic {
		return "diagnostic: " + string(r.Reason)
	}
	return string(r.Activity)
}

func hasChildrenCell(r subagent.Row) string {
	switch {
	case r.Kind == subagent.KindDiagnostic:
		return ""
	case r.HasChildren:
		return "yes"
	}
	return "no"
}

var (
	idColumn      = Column[subagent.Row]{Header: "ID", Value: func(r subagent.Row) string { return r.ID }}
	statusColumns = []Column[subagent.Row]{
		{Header: "STATUS", Value: status},
		{Header: "MODE", Value: func(r subagent.Row) string { return string(r.Mode) }},
		{Header: "CHILDREN", Value: hasChildrenCell},
		{Header: "LABEL", Value: label},
	}
	listingColumns    = append([]Column[subagent.Row]{idColumn}, statusColumns...)
	descendantColumns = append([]Column[subagent.Row]{
		idColumn,
		{Header: "DEPTH", Value: func(r subagent.Row) string { return itoa(r.Depth) }},
		{Header: "PARENT", Value: func(r subagent.Row) string { return r.ParentID }},
	}, statusColumns...)
)
