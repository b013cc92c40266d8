package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/corpus"
	"github.com/dsh-project/dsh/internal/diagnose"
	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/jsjson"
	"github.com/dsh-project/dsh/internal/location"
	"github.com/dsh-project/dsh/internal/render"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/subagent"
)

// demoParent is the root of the sample corpus.
const demoParent = "demo-parent"

func newDemoCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Build a sample corpus, list it and diagnose it",
		Long: `Build a small sample corpus in the database, print dsh list for it
(descendants scope) and, in table output, what dsh diagnose finds, to show
what dsh does on a fresh machine.

The corpus is written through dsh's own write paths: the children are
started with the echo provider exactly as dsh start starts them, the broken
child is written as a crashed writer would have left it:
  demo-parent       a root session with one completed turn
  demo-continuable  a continuable child that finished its first turn
  demo-one-shot     a one-shot child (listed; hidden from -o agents)
  demo-fork         an ordinary fork of the parent (never a row; walked)
  demo-broken       a child whose descriptor is malformed (diagnostic: corrupt)
  demo-grandchild   a continuable child of demo-continuable (depth 2)

The ids are fixed. Sessions already in the database are left as they are and
only the missing ones are written, so running dsh demo again (even after an
interrupted run, or while another dsh demo runs on the same database) is
harmless and exits 0; remove the database (or use another --db) for a fresh
corpus.

` + exitStatusHelp(),
		Example: "  dsh demo\n  dsh demo -o json\n  dsh --db /tmp/demo.db demo && dsh --db /tmp/demo.db list --parent demo-parent -o agents",
		Args:    exactArgs(),
	}
	out := addOutputFlag(cmd, render.Table, render.TSV, render.JSON, render.JSONL, render.Agents)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		p, err := out.printer(a, cmd)
		if err != nil {
			return err
		}
		return runDemo(cmd.Context(), a, p)
	}
	return cmd
}

func runDemo(ctx context.Context, a *app, p *render.Printer) (err error) {
	s, err := a.openStore(ctx)
	if err != nil {
		return err
	}
	defer closeStore(s, &err)
	rt, err := a.runtime(s)
	if err != nil {
		return err
	}
	wrote, err := writeDemoCorpus(ctx, s, rt, a.now())
	if err != nil {
		return err
	}
	if wrote {
		fmt.Fprintf(a.stderr, "dsh: wrote the demo corpus to %s\n", render.Escape(s.Path()))
	} else {
		fmt.Fprintf(a.stderr, "dsh: the demo corpus is already in %s; listing it\n", render.Escape(s.Path()))
	}
	rows, err := subagent.NewStoreLister(s, s, subagent.DefaultColdConcurrency).ListDescendants(ctx, demoParent)
	if err != nil {
		return cancelledListing(ctx, err)
	}
	if err := p.Listing(rows, corpus.ScopeDescendants); err != nil {
		return err
	}
	if f := p.Format(); f == render.Table || f == render.TSV {
		// The broken child is there to be explained: show what diagnose
		// finds, after a blank line (machine formats stay one listing).
		if err := showDemoDiagnosis(ctx, a, s, p); err != nil {
			return err
		}
	}
	fmt.Fprintf(a.stderr, "dsh: try: dsh list --parent %s -o agents; dsh diagnose --parent %s -o json\n", demoParent, demoParent)
	return nil
}

func showDemoDiagnosis(ctx context.Context, a *app, s location.Store, p *render.Printer) error {
	if _, err := fmt.Fprintln(a.stdout); err != nil {
		return err
	}
	out := p.Diagnosis()
	sum, err := diagnose.Run(ctx, s, diagnose.Options{
		Select: diagnose.Selection{Parent: demoParent, HasParent: true, Scope: corpus.ScopeDescendants},
		Strict: true,
	}, out.Add)
	if err != nil {
		return err
	}
	return out.Close(sum)
}

// demoStart is one child of the sample corpus, started like dsh start.
type demoStart struct {
	id, parent string
	mode       subagent.Mode
	label      string
	message    string
}

var demoStarts = []demoStart{
	{"demo-continuable", demoParent, subagent.ModeContinuable, "summarize the design notes", "Summarize the design notes."},
	{"demo-one-shot", demoParent, subagent.ModeOneShot, "count the TODOs", "Count the TODOs in the tree."},
	{"demo-grandchild", "demo-continuable", subagent.ModeContinuable, "check one section", "Check the section on caching."},
}

// writeDemoCorpus writes whatever part of the sample corpus is missing and
// reports whether it wrote anything. The root, its ordinary fork and the
// broken child go in one transaction; each other child is a real start
// whose turn the echo provider answers. Every session gets its own
// millisecond, so the listing order is the order above.
func writeDemoCorpus(ctx context.Context, s location.Store, rt *subagent.Runtime, now time.Time) (bool, error) {
	wrote, err := writeDemoRoot(ctx, s, now.UnixMilli())
	if err != nil {
		return false, err
	}
	for i, d := range demoStarts {
		if _, err := s.Header(ctx, d.id); err == nil {
			continue
		} else if !errors.Is(err, backend.ErrNotFound) {
			return false, err
		}
		at := now.Add(time.Duration(5+i) * time.Millisecond)
		rt.Now = func() time.Time { return at }
		label := d.label
		_, err := rt.Start(ctx, subagent.StartRequest{
			Parent: d.parent, ChildID: d.id, Mode: d.mode, Label: &label, Message: d.message, MaxDepth: 2,
		})
		if dsherr.CodeOf(err) == dsherr.DuplicateChild {
			continue // another dsh demo, running at the same time, started it
		}
		if err != nil {
			return false, fmt.Errorf("start demo child %s: %w", d.id, err)
		}
		wrote = true
	}
	return wrote, nil
}

// writeDemoRoot writes the root session with one completed turn, its
// ordinary fork and a subagent child whose only descriptor is malformed (a
// provider that is not a string), in one transaction, unless the root is
// there already: of two demos run at once exactly one writes it, the other
// finds it inside its transaction or fails to create it as a duplicate. The broken child is dated after the
// started ones so that it lists last.
func writeDemoRoot(ctx context.Context, s location.Store, now int64) (wrote bool, err error) {
	cwd := "/demo/work"
	parent := session.Header{Version: session.FormatVersion, ID: demoParent, CreatedAt: now, Cwd: &cwd}
	turn := func(messageID, user string, tail ...session.Event) []session.Event {
		log := []session.Event{
			{Type: session.TypeTurnStart, Data: json.RawMessage(`{"turn":1}`)},
			{Type: session.TypeUserMessage, SurfaceOp: json.RawMessage(`"append"`),
				Data: json.RawMessage(`{"content":[{"type":"text","text":` + jsjson.String(user) + `}],"source":{"kind":"user"},"role":"user","id":` + jsjson.String(messageID) + `}`)},
		}
		log = append(log, tail...)
		log = append(log, session.Event{Type: session.TypeTurnEnd, Data: json.RawMessage(`{"turn":1,"reason":{"kind":"completed"}}`)})
		for i := range log {
			log[i].Seq, log[i].Time = int64(i), now
		}
		return log
	}
	parentLog := turn("demo-user-1", "Plan the release notes.")
	fork, forkSeed := session.Fork(parent, parentLog, "demo-fork", now+1)
	origin, depth := session.OriginSubagent, int64(1)
	parentID := demoParent
	broken := session.Header{Version: session.FormatVersion, ID: "demo-broken", CreatedAt: now + 8, Cwd: &cwd,
		ParentSession: &parentID, Origin: &origin, DelegationDepth: &depth}
	brokenLog := turn("demo-user-2", "Do something.", session.Event{Type: session.TypeDescriptor,
		Data: json.RawMessage(`{"version":2,"mode":"continuable","provider":7,"label":"broken"}`)})
	err = s.Update(ctx, func(tx backend.Store) error {
		if _, err := tx.Header(ctx, demoParent); !errors.Is(err, backend.ErrNotFound) {
			return err
		}
		wrote = true
		for _, w := range []struct {
			h      session.Header
			events []session.Event
		}{{parent, parentLog}, {fork, forkSeed}, {broken, brokenLog}} {
			if err := tx.CreateSession(ctx, w.h, w.events); err != nil {
				return err
			}
		}
		return subagent.RefreshResolvedRowsIn(ctx, tx, []string{parent.ID, fork.ID, broken.ID})
	})
	if errors.Is(err, backend.ErrDuplicate) {
		// PostgreSQL: another demo committed the root after this
		// transaction looked (its snapshot did not show it).
		return false, nil
	}
	return wrote && err == nil, err
}
