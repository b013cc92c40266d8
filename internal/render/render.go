// Package render prints dsh's results. Commands build plain data values and
// choose a Format; render decides how they look: an aligned table on a
// terminal, tab-separated lines when stdout is a pipe, or JSON for machines.
// Data types never know how they are printed.
//
// Every string that reaches human output (table and TSV cells, record values)
// goes through Escape, so untrusted text cannot drive the terminal. JSON
// output needs no such step: its encoding already escapes control characters.
package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// Format is an output format name as accepted by -o/--output.
type Format string

// The formats every printer understands. Commands accept the subset that
// makes sense for them (see ParseFormat).
const (
	// Table is the human format: aligned columns when stdout is a terminal,
	// tab-separated values otherwise (like TSV).
	Table Format = "table"
	// TSV is one line per row, cells separated by tabs, no header line: the
	// stable shape for cut, awk and sort.
	TSV Format = "tsv"
	// JSON is one compact JSON document followed by a newline; a list is one
	// array.
	JSON Format = "json"
	// JSONL is one compact JSON value per line; a list prints one element per
	// line.
	JSONL Format = "jsonl"
)

// ParseFormat checks that s names one of the allowed formats.
func ParseFormat(s string, allowed ...Format) (Format, error) {
	for _, f := range allowed {
		if string(f) == s {
			return f, nil
		}
	}
	names := make([]string, len(allowed))
	for i, f := range allowed {
		names[i] = string(f)
	}
	return "", fmt.Errorf("unsupported output format %q (want %s)", s, strings.Join(names, ", "))
}

// Options says where output goes and how it may look.
type Options struct {
	Format Format
	// TTY is true when the writer is a terminal; Table then draws aligned
	// columns instead of tab-separated lines.
	TTY bool
	// Color permits ANSI styling. The caller decides (a terminal, or
	// CLICOLOR_FORCE on a pipe; never with --no-color, NO_COLOR or
	// TERM=dumb).
	Color bool
	// UTF8 permits non-ASCII drawing characters (the tree's box drawing):
	// the caller's locale is UTF-8.
	UTF8 bool
}

// Printer writes results in one format to one writer.
type Printer struct {
	w    io.Writer
	opts Options
	// catalogStatuses makes list_agents text name a child that no live
	// process holds "inactive", as DSH 0.1.7 does (rc.8: "ready").
	catalogStatuses bool
}

// New returns a printer writing to w.
func New(w io.Writer, opts Options) *Printer {
	if opts.Format == "" {
		opts.Format = Table
	}
	return &Printer{w: w, opts: opts}
}

// Format is the printer's format.
func (p *Printer) Format() Format { return p.opts.Format }

// human reports whether output is for people (table or TSV) rather than JSON.
func (p *Printer) human() bool { return p.opts.Format == Table || p.opts.Format == TSV }

// aligned reports whether human output is drawn as an aligned table.
func (p *Printer) aligned() bool { return p.opts.Format == Table && p.opts.TTY }

// JSON writes v as one compact JSON document and a newline, whatever the
// printer's format. Struct field order is the declaration order; values that
// implement json.Marshaler (DSH events and headers) keep their exact bytes:
// HTML escaping is off, so nothing but insignificant whitespace is changed.
func (p *Printer) JSON(v any) error {
	b, err := marshal(v)
	if err != nil {
		return err
	}
	_, err = p.w.Write(b)
	return err
}

// Line writes one line holding a single value (an id, a path) in the table
// and TSV formats: escaped on a terminal, unchanged into a pipe, so that
// CHILD=$(dsh start …) captures the id itself, whatever it contains.
func (p *Printer) Line(s string) error {
	if p.opts.TTY {
		s = Escape(s)
	}
	_, err := io.WriteString(p.w, s+"\n")
	return err
}

func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encode JSON: %w", err)
	}
	return buf.Bytes(), nil
}

// Field is one name/value pair of a record printed for people.
type Field struct {
	Name  string
	Value string
}

// Record prints one result. JSON and JSONL print v; table and TSV print
// fields, one per line, name and value aligned on a terminal and separated by
// a tab otherwise.
func (p *Printer) Record(v any, fields []Field) error {
	if !p.human() {
		return p.JSON(v)
	}
	if p.aligned() {
		width := 0
		for _, f := range fields {
			width = max(width, displayWidth(Escape(f.Name)))
		}
		var b strings.Builder
		for _, f := range fields {
			name := Escape(f.Name)
			b.WriteString(p.style(name, bold))
			b.WriteString(strings.Repeat(" ", width-displayWidth(name)+2))
			b.WriteString(Escape(f.Value))
			b.WriteByte('\n')
		}
		_, err := io.WriteString(p.w, b.String())
		return err
	}
	var b strings.Builder
	for _, f := range fields {
		b.WriteString(Escape(f.Name))
		b.WriteByte('\t')
		b.WriteString(Escape(f.Value))
		b.WriteByte('\n')
	}
	_, err := io.WriteString(p.w, b.String())
	return err
}

type sgr string

const bold sgr = "1"

// style wraps s in an ANSI style when colour is on.
func (p *Printer) style(s string, code sgr) string {
	if !p.opts.Color || s == "" {
		return s
	}
	return "\x1b[" + string(code) + "m" + s + "\x1b[0m"
}
