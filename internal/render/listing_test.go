package render

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-project/dsh/internal/corpus"
	"github.com/dsh-project/dsh/internal/subagent"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

func strp(s string) *string { return &s }

// sampleRows covers every row shape: continuable and one-shot children
// (with and without a label), running and inactive, with and without
// children, both diagnostic reasons, and a label and id with characters a
// terminal would act on.
func sampleRows() []subagent.Row {
	return []subagent.Row{
		{Kind: subagent.KindChild, ID: "33333333-3333-4333-8333-333333333333", Mode: subagent.ModeContinuable, Label: strp("Reply with CHILD_OK"), Activity: subagent.ActivityInactive, HasChildren: true, ParentID: "parent", Depth: 1},
		{Kind: subagent.KindChild, ID: "grandchild", Mode: subagent.ModeContinuable, Label: strp("nested \"leaf\" — ü"), Activity: subagent.ActivityRunning, ParentID: "33333333-3333-4333-8333-333333333333", Depth: 2},
		{Kind: subagent.KindChild, ID: "one-shot-labeled", Mode: subagent.ModeOneShot, Label: strp("finished once"), Activity: subagent.ActivityInactive, ParentID: "parent", Depth: 1},
		{Kind: subagent.KindChild, ID: "one-shot-bare", Mode: subagent.ModeOneShot, Activity: subagent.ActivityInactive, ParentID: "parent", Depth: 1},
		{Kind: subagent.KindDiagnostic, ID: "broken-child", Reason: subagent.ReasonCorrupt, ParentID: "parent", Depth: 1},
		{Kind: subagent.KindDiagnostic, ID: "flaky-child", Reason: subagent.ReasonUnavailable, ParentID: "fork", Depth: 2},
		{Kind: subagent.KindChild, ID: "hostile", Mode: subagent.ModeContinuable, Label: strp("line1\nline2 \x1b]0;pwned\x07 \u202e"), Activity: subagent.ActivityInactive, ParentID: "parent", Depth: 1},
	}
}

func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from %s:\n got: %q\nwant: %q", name, path, got, want)
	}
}

// Every listing format, in both scopes, is pinned by a golden file.
func TestListingGolden(t *testing.T) {
	formats := []struct {
		name string
		opts Options
	}{
		{"json", Options{Format: JSON}},
		{"jsonl", Options{Format: JSONL}},
		{"agents", Options{Format: Agents}},
		{"agents-tty", Options{Format: Agents, TTY: true}},
		{"tsv", Options{Format: TSV}},
		{"table-pipe", Options{Format: Table}},
		{"table-tty", Options{Format: Table, TTY: true}},
		{"table-tty-color", Options{Format: Table, TTY: true, Color: true}},
	}
	for _, scope := range []corpus.Scope{corpus.ScopeChildren, corpus.ScopeDescendants} {
		for _, f := range formats {
			for _, set := range []struct {
				name string
				rows []subagent.Row
			}{{"rows", sampleRows()}, {"empty", nil}} {
				name := "listing-" + scope.String() + "-" + set.name + "." + f.name
				if set.rows == nil && f.opts.TTY {
					continue // the same bytes as off a terminal
				}
				t.Run(name, func(t *testing.T) {
					var buf bytes.Buffer
					if err := New(&buf, f.opts).Listing(set.rows, scope); err != nil {
						t.Fatal(err)
					}
					checkGolden(t, name, buf.Bytes())
				})
			}
		}
	}
}

// DSH's list_agents pins (semantics §10.3): A5, A11, X1, X2 and the empty
// case A2.
func TestListAgentsTextDSHPins(t *testing.T) {
	child := func(id, label string, mode subagent.Mode) subagent.Row {
		return subagent.Row{Kind: subagent.KindChild, ID: id, Mode: mode, Label: strp(label), Activity: subagent.ActivityInactive}
	}
	tests := []struct {
		name  string
		rows  []subagent.Row
		scope corpus.Scope
		want  string
	}{
		{"A2 no children", nil, corpus.ScopeChildren, "(no subagents)"},
		{"A2 only one-shot children", []subagent.Row{child("o", "once", subagent.ModeOneShot)}, corpus.ScopeChildren, "(no subagents)"},
		{"A5 one-shot hidden, continuable ready", []subagent.Row{
			child("oneshot", "finished once", subagent.ModeOneShot),
			child("c1", "summarize the doc", subagent.ModeContinuable),
		}, corpus.ScopeChildren, "c1 [ready] \u2014 summarize the doc"},
		{"A11 descendants", []subagent.Row{
			{Kind: subagent.KindChild, ID: "one-shot-mid", Mode: subagent.ModeOneShot, Label: strp("one-shot-mid"), ParentID: "parent", Depth: 1},
			{Kind: subagent.KindChild, ID: "deep-leaf", Mode: subagent.ModeContinuable, Label: strp("deep leaf"), ParentID: "one-shot-mid", Depth: 2},
			{Kind: subagent.KindDiagnostic, ID: "broken-node", Reason: subagent.ReasonUnavailable, ParentID: "parent", Depth: 1},
		}, corpus.ScopeDescendants, "deep-leaf [ready] parent=one-shot-mid depth=2 \u2014 deep leaf\nbroken-node [diagnostic: unavailable] parent=parent depth=1"},
		{"X1 snapshot", []subagent.Row{child("33333333-3333-4333-8333-333333333333", "Reply with CHILD_OK", subagent.ModeContinuable)},
			corpus.ScopeChildren, "33333333-3333-4333-8333-333333333333 [ready] \u2014 Reply with CHILD_OK"},
		{"X2 descriptorless child", []subagent.Row{{Kind: subagent.KindDiagnostic, ID: "subagent-diagnostic-child", Reason: subagent.ReasonCorrupt}},
			corpus.ScopeChildren, "subagent-diagnostic-child [diagnostic: corrupt]"},
		{"leased child is running", []subagent.Row{{Kind: subagent.KindChild, ID: "c", Mode: subagent.ModeContinuable, Label: strp("busy"), Activity: subagent.ActivityRunning}},
			corpus.ScopeChildren, "c [running] \u2014 busy"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ListAgentsText(tt.rows, tt.scope); got != tt.want {
				t.Errorf("got %q\nwant %q", got, tt.want)
			}
		})
	}
}

// Labels reach the agents text byte for byte (DSH's exact text) off a
// terminal, and escaped on one.
func TestListAgentsTerminalEscaping(t *testing.T) {
	rows := []subagent.Row{{Kind: subagent.KindChild, ID: "c", Mode: subagent.ModeContinuable, Label: strp("a\x1b[2Jb"), Activity: subagent.ActivityInactive}}
	var pipe, tty bytes.Buffer
	if err := New(&pipe, Options{Format: Agents}).Listing(rows, corpus.ScopeChildren); err != nil {
		t.Fatal(err)
	}
	if err := New(&tty, Options{Format: Agents, TTY: true}).Listing(rows, corpus.ScopeChildren); err != nil {
		t.Fatal(err)
	}
	if want := "c [ready] \u2014 a\x1b[2Jb\n"; pipe.String() != want {
		t.Errorf("pipe = %q, want %q", pipe.String(), want)
	}
	if strings.Contains(tty.String(), "\x1b") || !strings.Contains(tty.String(), `a\x1b[2Jb`) {
		t.Errorf("tty = %q, want the ESC escaped", tty.String())
	}
}

// The tree places each row under its parentId (through the gap lines that
// stand for parents without a row), draws the vertical line of a level only
// while more siblings follow, dims gap lines and colours states only when
// colour is on, and escapes stored strings. A row whose parent is neither a
// row nor a gap, or whose gaps loop, hangs under root.
func TestListingTree(t *testing.T) {
	label := func(s string) *string { return &s }
	rows := []subagent.Row{
		{Kind: subagent.KindChild, ID: "a", Mode: subagent.ModeContinuable, Label: label("first"), Activity: subagent.ActivityRunning, ParentID: "p", Depth: 1},
		{Kind: subagent.KindChild, ID: "a1", Mode: subagent.ModeOneShot, Activity: subagent.ActivityInactive, ParentID: "a", Depth: 2},
		{Kind: subagent.KindDiagnostic, ID: "a2", Reason: subagent.ReasonUnavailable, ParentID: "a", Depth: 2},
		{Kind: subagent.KindChild, ID: "b", Mode: subagent.ModeContinuable, Label: label("evil\x1b]0;x\x07"), Activity: subagent.ActivityInactive, ParentID: "p", Depth: 1},
		{Kind: subagent.KindDiagnostic, ID: "b11", Reason: subagent.ReasonCorrupt, ParentID: "b1", Depth: 3},
		{Kind: subagent.KindChild, ID: "f1", Mode: subagent.ModeContinuable, Activity: subagent.ActivityInactive, ParentID: "f", Depth: 2},
		{Kind: subagent.KindChild, ID: "lost", Mode: subagent.ModeContinuable, Activity: subagent.ActivityInactive, ParentID: "nowhere", Depth: 2},
		{Kind: subagent.KindChild, ID: "looped", Mode: subagent.ModeContinuable, Activity: subagent.ActivityInactive, ParentID: "x", Depth: 3},
	}
	gaps := []TreeGap{
		{ID: "b1", ParentID: "b", Why: "filtered"},
		{ID: "f", ParentID: "p", Why: "fork\x1b"},
		{ID: "x", ParentID: "y", Why: "x"},
		{ID: "y", ParentID: "x", Why: "y"},
	}
	for _, tt := range []struct {
		opts Options
		want string
	}{
		{Options{Format: Tree, UTF8: true}, `p
├── a  running  continuable  first
│   ├── a1  inactive  one-shot
│   └── a2  unavailable
├── b  inactive  continuable  evil\x1b]0;x\x07
│   └── b1  (filtered)
│       └── b11  corrupt
├── f  (fork\x1b)
│   └── f1  inactive  continuable
├── lost  inactive  continuable
└── y  (y)
    └── x  (x)
        └── looped  inactive  continuable
`},
		{Options{Format: Tree, Color: true}, "p\n" +
			"|-- a  \x1b[32mrunning\x1b[0m  continuable  first\n" +
			"|   |-- a1  inactive  one-shot\n" +
			"|   `-- a2  \x1b[33munavailable\x1b[0m\n" +
			"|-- b  inactive  continuable  evil\\x1b]0;x\\x07\n" +
			"|   `-- b1  \x1b[2m(filtered)\x1b[0m\n" +
			"|       `-- b11  \x1b[31mcorrupt\x1b[0m\n" +
			"|-- f  \x1b[2m(fork\\x1b)\x1b[0m\n" +
			"|   `-- f1  inactive  continuable\n" +
			"|-- lost  inactive  continuable\n" +
			"`-- y  \x1b[2m(y)\x1b[0m\n" +
			"    `-- x  \x1b[2m(x)\x1b[0m\n" +
			"        `-- looped  inactive  continuable\n"},
	} {
		var b strings.Builder
		if err := New(&b, tt.opts).ListingTree("p", rows, gaps); err != nil {
			t.Fatal(err)
		}
		if b.String() != tt.want {
			t.Errorf("%+v:\n got %q\nwant %q", tt.opts, b.String(), tt.want)
		}
	}
}
