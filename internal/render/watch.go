package render

import (
	"strings"

	"github.com/dsh-project/dsh/internal/corpus"
	"github.com/dsh-project/dsh/internal/leases"
	"github.com/dsh-project/dsh/internal/watch"
)

// WatchEvents prints the rows a watched listing changed, one line each:
//   - JSONL: {"type":"ADDED"|"MODIFIED"|"DELETED","row":…}, the row exactly
//     as the listing's -o json prints it (AppendListEntry);
//   - table and TSV: the type, then the row's cells as the listing's table
//     prints them, tab-separated; wide adds the holder's cells (holders as
//     for WideListing).
//
// The lines are not aligned with the table printed before them: each is
// written as soon as its change is seen.
func (p *Printer) WatchEvents(events []watch.Event, scope corpus.Scope, holders map[string]leases.Row) error {
	var b []byte
	switch p.opts.Format {
	case JSONL:
		for _, e := range events {
			b = append(b, `{"type":"`...)
			b = append(b, e.Type...)
			b = append(b, `","row":`...)
			b = AppendListEntry(b, e.Row, scope)
			b = append(b, "}\n"...)
		}
	case Wide:
		cols := wideColumns(scope)
		for _, e := range events {
			b = appendCells(b, e.Type, cols, heldBy(e.Row, holders))
		}
	default:
		cols := listingColumns
		if scope == corpus.ScopeDescendants {
			cols = descendantColumns
		}
		for _, e := range events {
			b = appendCells(b, e.Type, cols, e.Row)
		}
	}
	_, err := p.w.Write(b)
	return err
}

func appendCells[T any](b []byte, t watch.Type, cols []Column[T], item T) []byte {
	cells := make([]string, 0, len(cols)+1)
	cells = append(cells, string(t))
	for _, c := range cols {
		cells = append(cells, Escape(c.Value(item)))
	}
	b = append(b, strings.Join(cells, "\t")...)
	return append(b, '\n')
}
