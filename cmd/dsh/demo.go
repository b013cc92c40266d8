package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/dsh-project/dsh/internal/diagnose"
	"github.com/dsh-project/dsh/internal/jsjson"
	"github.com/dsh-project/dsh/internal/projcache"
	"github.com/dsh-project/dsh/internal/render"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/sqlitepersist"
	"github.com/dsh-project/dsh/internal/subagent"
)

// demoParent is the root of the sample corpus; its presence means the demo
// corpus is already in the database.
const demoParent = "demo-parent"

func newDemoCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Build a sample corpus, list it and diagnose it",
		Long: `Build a small sample corpus in the database, print dsh list for it
(descendants scope) and, in table output, what dsh diagnose finds, to show
what dsh does on a fresh machine.

The corpus is written the way DSH lays sessions out, through dsh's own write
paths, in one transaction:
  demo-parent       a root session with one completed turn
  demo-continuable  a continuable child that finished its first turn
  demo-one-shot     a one-shot child (listed; hidden from -o agents)
  demo-fork         an ordinary fork of the parent (never a row; walked)
  demo-broken       a child whose descriptor is malformed (diagnostic: corrupt)
  demo-grandchild   a continuable child of demo-continuable (depth 2)

The ids are fixed. When demo-parent already exists the corpus is left as it
is and only listed again, so running dsh demo twice is harmless; remove the
database (or use another --db) for a fresh corpus.

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
	_, err = s.Header(ctx, demoParent)
	switch {
	case errors.Is(err, sqlitepersist.ErrNotFound):
		if err := writeDemoCorpus(ctx, s, a.now().UnixMilli()); err != nil {
			return err
		}
		fmt.Fprintf(a.stderr, "dsh: wrote the demo corpus to %s\n", render.Escape(s.Path()))
	case err != nil:
		return err
	default:
		fmt.Fprintf(a.stderr, "dsh: the demo corpus is already in %s; listing it\n", render.Escape(s.Path()))
	}
	rows, err := subagent.NewStoreLister(s, s, subagent.DefaultColdConcurrency).ListDescendants(ctx, demoParent)
	if err != nil {
		return cancelledListing(ctx, err)
	}
	if err := p.Listing(rows, render.ScopeDescendants); err != nil {
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

func showDemoDiagnosis(ctx context.Context, a *app, s *sqlitepersist.Store, p *render.Printer) error {
	if _, err := fmt.Fprintln(a.stdout); err != nil {
		return err
	}
	out := p.Diagnosis()
	sum, err := diagnose.Run(ctx, s, diagnose.Options{
		Select: diagnose.Selection{Parent: demoParent, HasParent: true, Scope: diagnose.ScopeDescendants},
		Strict: true,
	}, out.Add)
	if err != nil {
		return err
	}
	return out.Close(sum)
}

// writeDemoCorpus writes the sample sessions in one transaction, each child
// with the checkpoint record its writer leaves at the end of its turn.
func writeDemoCorpus(ctx context.Context, s *sqlitepersist.Store, now int64) error {
	cwd := "/demo/work"
	b := demoLog{time: now}
	parent := session.Header{Version: session.FormatVersion, ID: demoParent, CreatedAt: now, Cwd: &cwd}
	parentLog := b.turn(nil, 1, "Plan the release notes.", "Here is a plan.")

	continuable := demoChild("demo-continuable", demoParent, 1, now+1, cwd)
	continuableLog := b.turn(b.continuableSeed("summarize the design notes"), 1,
		"Summarize the design notes.", "The notes describe a listing with three rungs.")

	oneShot := demoChild("demo-one-shot", demoParent, 1, now+2, cwd)
	oneShotLog := b.oneShotTurn("count the TODOs", "Count the TODOs in the tree.", "There are 12.")

	fork, forkSeed := session.Fork(parent, parentLog, "demo-fork", now+3)

	broken := demoChild("demo-broken", demoParent, 1, now+4, cwd)
	brokenLog := b.append(nil,
		demoEvent{session.TypeTurnStart, `{"turn":1}`},
		demoEvent{session.TypeUserMessage, b.userMessage("Do something.")},
		// provider must be a string: DSH reads this as malformed.
		demoEvent{session.TypeDescriptor, `{"version":2,"mode":"continuable","provider":7,"label":"broken"}`},
		demoEvent{session.TypeTurnEnd, `{"turn":1,"reason":{"kind":"completed"}}`})

	grandchild := demoChild("demo-grandchild", "demo-continuable", 2, now+5, cwd)
	grandchildLog := b.turn(b.continuableSeed("check one section"), 1,
		"Check the section on caching.", "It is consistent.")

	reg := subagent.NewRegistry()
	return s.WriteTx(ctx, func(tx *sqlitepersist.Store) error {
		cache := projcache.NewCache(tx.Querier(), reg)
		for _, w := range []struct {
			h      session.Header
			events []session.Event
		}{
			{parent, parentLog}, {continuable, continuableLog}, {oneShot, oneShotLog},
			{fork, forkSeed}, {broken, brokenLog}, {grandchild, grandchildLog},
		} {
			if err := tx.CreateSession(ctx, w.h, w.events); err != nil {
				return err
			}
			if !w.h.IsSubagent() {
				continue
			}
			f := reg.NewFold()
			f.Apply(w.events...)
			cp, err := f.Checkpoint()
			if err != nil {
				return fmt.Errorf("fold demo session %s: %w", w.h.ID, err)
			}
			if err := cache.Put(ctx, w.h, f.AsOfSeq(), cp); err != nil {
				return err
			}
		}
		return nil
	})
}

func demoChild(id, parent string, depth, createdAt int64, cwd string) session.Header {
	origin := session.OriginSubagent
	return session.Header{Version: session.FormatVersion, ID: id, CreatedAt: createdAt, Cwd: &cwd,
		ParentSession: &parent, Origin: &origin, DelegationDepth: &depth}
}

// demoLog builds event logs in DSH's layouts (semantics §7.2); every event
// is stamped with the demo's clock.
type demoLog struct {
	time     int64
	messages int
}

type demoEvent struct{ typ, data string }

// append adds events to log, numbering them from its end.
func (b *demoLog) append(log []session.Event, events ...demoEvent) []session.Event {
	for _, e := range events {
		ev := session.Event{Type: e.typ, Seq: int64(len(log)), Time: b.time, Data: json.RawMessage(e.data)}
		if e.typ == session.TypeUserMessage || e.typ == session.TypeAssistantMsg {
			ev.SurfaceOp = json.RawMessage(`"append"`)
		}
		log = append(log, ev)
	}
	return log
}

func (b *demoLog) nextID(prefix string) string {
	b.messages++
	return fmt.Sprintf("%s-%d", prefix, b.messages)
}

func (b *demoLog) userMessage(text string) string {
	return `{"content":[{"type":"text","text":` + jsjson.String(text) + `}],"source":{"kind":"user"},"role":"user","id":` + jsjson.String(b.nextID("demo-user")) + `}`
}

func (b *demoLog) assistantMessage(turn int, text string) string {
	return fmt.Sprintf(`{"turn":%d,"step":1,"message":{"role":"assistant","content":[{"type":"text","text":%s}],"source":{"kind":"model","provider":"echo","model":"echo"},"id":%s}}`,
		turn, jsjson.String(text), jsjson.String(b.nextID("demo-assistant")))
}

// turn appends one completed turn: a user message and the model's reply in
// one step.
func (b *demoLog) turn(log []session.Event, turn int, prompt, reply string) []session.Event {
	t := fmt.Sprint(turn)
	return b.append(log,
		demoEvent{session.TypeTurnStart, `{"turn":` + t + `}`},
		demoEvent{session.TypeStepStart, `{"turn":` + t + `,"step":1}`},
		demoEvent{session.TypeUserMessage, b.userMessage(prompt)},
		demoEvent{session.TypeAssistantMsg, b.assistantMessage(turn, reply)},
		demoEvent{session.TypeStepEnd, `{"turn":` + t + `,"step":1}`},
		demoEvent{session.TypeTurnEnd, `{"turn":` + t + `,"reason":{"kind":"completed"}}`})
}

// continuableSeed is a fresh continuable child's creation seed: its
// descriptor, the end-seed marker and the delegated approval policy.
func (b *demoLog) continuableSeed(label string) []session.Event {
	return b.append(nil,
		demoEvent{session.TypeDescriptor, `{"version":2,"mode":"continuable","provider":"spawn","label":` + jsjson.String(label) + `,"agentProvider":"echo","agentModel":"echo"}`},
		demoEvent{session.TypeEndSeed, `{}`},
		demoEvent{session.TypeApproval, `{"policy":"never","source":"delegation"}`})
}

// oneShotTurn is a one-shot child's whole log: its descriptor is written
// inside the first turn, after the inbox claim.
func (b *demoLog) oneShotTurn(label, prompt, reply string) []session.Event {
	inbox := b.userMessage(prompt)
	return b.append(nil,
		demoEvent{session.TypeApproval, `{"policy":"never","source":"delegation"}`},
		demoEvent{session.TypeInboxSpliced, `{"target":"next-turn","start":0,"inserted":[` + inbox + `]}`},
		demoEvent{session.TypeTurnStart, `{"turn":1}`},
		demoEvent{session.TypeInboxSpliced, `{"target":"next-turn","start":0,"removedCount":1,"inserted":[]}`},
		demoEvent{session.TypeDescriptor, `{"version":2,"mode":"one-shot","provider":"spawn","label":` + jsjson.String(label) + `}`},
		demoEvent{session.TypeStepStart, `{"turn":1,"step":1}`},
		demoEvent{session.TypeUserMessage, inbox},
		demoEvent{session.TypeAssistantMsg, b.assistantMessage(1, reply)},
		demoEvent{session.TypeStepEnd, `{"turn":1,"step":1}`},
		demoEvent{session.TypeTurnEnd, `{"turn":1,"reason":{"kind":"completed"}}`})
}
