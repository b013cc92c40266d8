package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/render"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/transfer"
)

// sessionView is what `dsh session show` reports: the header and either a
// summary of the stored log, as a read-only inspection sees it, or why the
// log could not be read.
type sessionView struct {
	Header headerJSON `json:"header"`
	// SourceFormat is the DSH format the session was read or imported
	// from (jsonl-vN[-zstd], dsh-sqlite-17); absent for dsh's own.
	SourceFormat string      `json:"sourceFormat,omitempty"`
	Log          *logSummary `json:"log,omitempty"`
	// Invalid is set instead of Log when the log fails DSH's validation.
	Invalid *invalidView `json:"invalid,omitempty"`
	// Unreadable is set instead of Log when a committed row cannot be
	// decoded (the damage DSH lists as unavailable).
	Unreadable *unreadableView `json:"unreadable,omitempty"`
}

type unreadableView struct {
	Seq    int64  `json:"seq"`
	Reason string `json:"reason"`
}

type logSummary struct {
	// Events counts the valid stored prefix (a torn tail is not counted).
	Events   int       `json:"events"`
	Turns    int       `json:"turns"`
	OpenTurn bool      `json:"openTurn"`
	Last     *eventRef `json:"lastEvent"`
	// TornTail is set when the stored log ends in a torn write that the
	// next resume would drop.
	TornTail *tornTailView `json:"tornTail,omitempty"`
}

type eventRef struct {
	Seq  int64  `json:"seq"`
	Type string `json:"type"`
}

type tornTailView struct {
	FromSeq int64  `json:"fromSeq"`
	Reason  string `json:"reason"`
}

type invalidView struct {
	Seq     int64  `json:"seq"`
	Rule    string `json:"rule"`
	Message string `json:"message"`
}

func newSessionShowCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Print a session's header and a summary of its log",
		Long: `Print a session's header and a summary of its stored event log: event
count, turns, whether a turn is open (interrupted), and the last event. A torn
tail, a log that fails validation and a committed row that cannot be decoded
are reported after the header, not repaired. Read-only.

` + exitStatusHelp(),
		Example: "  dsh session show 33333333-3333-4333-8333-333333333333\n  dsh session show my-session -o json",
		Args:    exactArgs("ID"),
	}
	src := addSourceFlags(cmd)
	out := addOutputFlag(cmd, render.Table, render.TSV, render.JSON)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		p, err := out.printer(a, cmd)
		if err != nil {
			return err
		}
		v, err := showSession(cmd.Context(), a, src, args[0])
		if err != nil {
			return err
		}
		return p.Record(v, v.fields())
	}
	return cmd
}

// showSession is `dsh session show` over the database or --source.
func showSession(ctx context.Context, a *app, src *sourceFlags, id string) (v sessionView, err error) {
	if err := checkSessionID("session show", id); err != nil {
		return v, err
	}
	r, err := src.open(ctx, a)
	if err != nil {
		return v, err
	}
	defer r.done(&err)
	err = r.view(ctx, func(view readCorpus) error {
		v, err = describeSession(ctx, view, id)
		if err != nil {
			return err
		}
		if formats, ok := view.(transfer.SourceFormatReader); ok {
			v.SourceFormat, err = formats.SourceFormat(ctx, id)
		}
		return err
	})
	return v, r.lookupError(id, err)
}

// sessionReader is what show reads of a corpus.
type sessionReader interface {
	backend.HeaderReader
	backend.LogReader
}

// describeSession reads everything show reports from one snapshot. Facts
// kept beside the log (such as who holds the session) belong here.
func describeSession(ctx context.Context, view sessionReader, id string) (sessionView, error) {
	ins, err := view.Inspect(ctx, id)
	var (
		ve *session.ValidationError
		ce *backend.CorruptRowError
	)
	if errors.As(err, &ve) || errors.As(err, &ce) {
		h, herr := view.Header(ctx, id)
		if herr != nil {
			return sessionView{}, herr
		}
		v := sessionView{Header: newHeaderJSON(h)}
		if ve != nil {
			v.Invalid = &invalidView{Seq: ve.Seq, Rule: ve.Rule, Message: ve.Msg}
		} else {
			v.Unreadable = &unreadableView{Seq: ce.Seq, Reason: ce.Reason}
		}
		return v, nil
	}
	if err != nil {
		return sessionView{}, err
	}
	sum := session.Summarize(ins.Events)
	log := &logSummary{Events: len(ins.Events), Turns: sum.Turns, OpenTurn: sum.OpenTurn}
	if len(ins.Events) > 0 {
		log.Last = &eventRef{Seq: sum.LastSeq, Type: sum.LastType}
	}
	if ins.Torn != nil {
		log.TornTail = &tornTailView{FromSeq: ins.Torn.FromSeq, Reason: ins.Torn.Reason}
	}
	return sessionView{Header: newHeaderJSON(ins.Header), Log: log}, nil
}

// fields is the human form of the view: every header field (absent ones as
// "-", which DSH distinguishes from zero), then the log summary.
func (v sessionView) fields() []render.Field {
	h := v.Header
	orDash := func(s string) string {
		if s == "" {
			return "-"
		}
		return s
	}
	fs := []render.Field{
		{Name: "id", Value: h.ID},
		{Name: "version", Value: strconv.FormatInt(h.Version, 10)},
		{Name: "createdAt", Value: fmt.Sprintf("%s (%d)", formatMillis(h.CreatedAt), h.CreatedAt)},
		{Name: "cwd", Value: orDash(optString(h.Cwd))},
		{Name: "parentSession", Value: orDash(optString(h.ParentSession))},
		{Name: "seedLength", Value: orDash(optInt(h.SeedLength))},
		{Name: "origin", Value: orDash(optString(h.Origin))},
		{Name: "delegationDepth", Value: orDash(optInt(h.DelegationDepth))},
		{Name: "agentPreset", Value: orDash(optString(h.AgentPreset))},
	}
	if v.SourceFormat != "" {
		fs = append(fs, render.Field{Name: "sourceFormat", Value: v.SourceFormat})
	}
	if v.Invalid != nil {
		where := "header"
		if v.Invalid.Seq >= 0 {
			where = "seq " + strconv.FormatInt(v.Invalid.Seq, 10)
		}
		return append(fs, render.Field{Name: "invalid", Value: fmt.Sprintf("%s: %s: %s", where, v.Invalid.Rule, v.Invalid.Message)})
	}
	if v.Unreadable != nil {
		return append(fs, render.Field{Name: "unreadable", Value: fmt.Sprintf("seq %d: %s", v.Unreadable.Seq, v.Unreadable.Reason)})
	}
	log := v.Log
	last := "-"
	if log.Last != nil {
		last = fmt.Sprintf("%d %s", log.Last.Seq, log.Last.Type)
	}
	open := "no"
	if log.OpenTurn {
		open = "yes"
	}
	fs = append(fs,
		render.Field{Name: "events", Value: itoa(log.Events)},
		render.Field{Name: "turns", Value: itoa(log.Turns)},
		render.Field{Name: "openTurn", Value: open},
		render.Field{Name: "lastEvent", Value: last},
	)
	if log.TornTail != nil {
		fs = append(fs, render.Field{Name: "tornTail", Value: fmt.Sprintf("from seq %d: %s", log.TornTail.FromSeq, log.TornTail.Reason)})
	}
	return fs
}
