package render

import (
	"bytes"
	"io"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/pkg/twwidth"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

// Column is one column of a list printed for people: a header and how to
// get the cell text from an item. Cell text is escaped by the list.
type Column[T any] struct {
	Header string
	Value  func(T) string
}

// List prints a sequence of items as they arrive. JSON writes one array,
// JSONL one element per line, TSV one line per item; all three stream. An
// aligned table has to see every row to size its columns, so it buffers until
// Close.
type List[T any] struct {
	p     *Printer
	cols  []Column[T]
	count int
	rows  [][]string
	err   error
}

// NewList starts a list on p. Call Close once every item is added, even when
// there were none (JSON then prints []).
func NewList[T any](p *Printer, cols []Column[T]) *List[T] {
	return &List[T]{p: p, cols: cols}
}

// Add prints (or, for an aligned table, collects) one item.
func (l *List[T]) Add(item T) error {
	if l.err != nil {
		return l.err
	}
	l.count++
	switch l.p.opts.Format {
	case JSON:
		sep := ","
		if l.count == 1 {
			sep = "["
		}
		b, err := marshal(item)
		if err != nil {
			l.err = err
			return err
		}
		b = b[:len(b)-1] // the encoder's newline; the array continues
		l.err = l.write(sep, string(b))
	case JSONL:
		b, err := marshal(item)
		if err != nil {
			l.err = err
			return err
		}
		l.err = l.write(string(b))
	default:
		cells := make([]string, len(l.cols))
		for i, c := range l.cols {
			cells[i] = Escape(c.Value(item))
		}
		if l.p.aligned() {
			l.rows = append(l.rows, cells)
			return nil
		}
		l.err = l.write(strings.Join(cells, "\t"), "\n")
	}
	return l.err
}

// Close finishes the list: closes the JSON array or draws the table.
func (l *List[T]) Close() error {
	if l.err != nil {
		return l.err
	}
	switch {
	case l.p.opts.Format == JSON:
		if l.count == 0 {
			return l.write("[]\n")
		}
		return l.write("]\n")
	case l.p.aligned() && len(l.rows) > 0:
		return l.drawTable()
	}
	return nil
}

func (l *List[T]) write(parts ...string) error {
	for _, s := range parts {
		if _, err := io.WriteString(l.p.w, s); err != nil {
			return err
		}
	}
	return nil
}

// drawTable renders the buffered rows without borders, columns separated by
// spaces (the shape of ls -l or gh's lists), header in bold when colour is
// allowed.
func (l *List[T]) drawTable() error {
	header := make([]any, len(l.cols))
	for i, c := range l.cols {
		header[i] = l.p.style(Escape(c.Header), bold)
	}
	var buf bytes.Buffer
	t := tablewriter.NewTable(&buf,
		tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{
			Borders: tw.BorderNone,
			Settings: tw.Settings{
				Lines:      tw.LinesNone,
				Separators: tw.SeparatorsNone,
			},
		})),
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithRowAlignment(tw.AlignLeft),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithHeaderAutoWrap(tw.WrapNone),
		tablewriter.WithTrimSpace(tw.Off),
		tablewriter.WithPadding(tw.Padding{Left: "", Right: "  ", Overwrite: true}),
	)
	t.Header(header...)
	for _, r := range l.rows {
		if err := t.Append(r); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	var out strings.Builder
	for line := range strings.Lines(buf.String()) {
		out.WriteString(trimPadding(strings.TrimSuffix(line, "\n")))
		out.WriteByte('\n')
	}
	return l.write(out.String())
}

// trimPadding drops the blanks tablewriter pads the last column with (they
// only get in the way of copy and paste), along with the style resets it
// interleaves with them, keeping one reset if any was dropped so a style
// never leaks into the next line.
func trimPadding(line string) string {
	const reset = "\x1b[0m"
	trimmed, hadReset := line, false
	for {
		switch {
		case strings.HasSuffix(trimmed, " "):
			trimmed = strings.TrimRight(trimmed, " ")
		case strings.HasSuffix(trimmed, reset):
			trimmed, hadReset = strings.TrimSuffix(trimmed, reset), true
		default:
			if hadReset {
				trimmed += reset
			}
			return trimmed
		}
	}
}

// displayWidth is the number of terminal cells s occupies.
func displayWidth(s string) int { return twwidth.Width(s) }
