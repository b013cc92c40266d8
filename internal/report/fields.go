package report

import (
	"fmt"
	"strconv"

	"github.com/dsh-project/dsh/internal/render"
)

// Fields is the human form of v, as `session show` prints it for people:
// every header field (absent ones as "-", which DSH distinguishes from
// zero), then the log summary.
func (v Session) Fields() []render.Field {
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
		{Name: "createdAt", Value: fmt.Sprintf("%s (%d)", render.Millis(h.CreatedAt), h.CreatedAt)},
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
		render.Field{Name: "events", Value: strconv.Itoa(log.Events)},
		render.Field{Name: "turns", Value: strconv.Itoa(log.Turns)},
		render.Field{Name: "openTurn", Value: open},
		render.Field{Name: "lastEvent", Value: last},
	)
	if log.TornTail != nil {
		fs = append(fs, render.Field{Name: "tornTail", Value: fmt.Sprintf("from seq %d: %s", log.TornTail.FromSeq, log.TornTail.Reason)})
	}
	return fs
}

func optString(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func optInt(p *int64) string {
	if p == nil {
		return ""
	}
	return strconv.FormatInt(*p, 10)
}
