package report

import (
	"context"
	"errors"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/session"
)

// Session is what `dsh session show` reports: the header and either a
// summary of the stored log, as a read-only inspection sees it, or why the
// log could not be read.
type Session struct {
	Header Header `json:"header"`
	// SourceFormat is the DSH format the session was read or imported
	// from (jsonl-vN[-zstd], dsh-sqlite-17); absent for dsh's own.
	SourceFormat string      `json:"sourceFormat,omitempty"`
	Log          *LogSummary `json:"log,omitempty"`
	// Invalid is set instead of Log when the log fails DSH's validation.
	Invalid *Invalid `json:"invalid,omitempty"`
	// Unreadable is set instead of Log when a committed row cannot be
	// decoded (the damage DSH lists as unavailable).
	Unreadable *Unreadable `json:"unreadable,omitempty"`
}

// Unreadable is the committed row that cannot be decoded.
type Unreadable struct {
	Seq    int64  `json:"seq"`
	Reason string `json:"reason"`
}

// LogSummary is the stored log in a few numbers.
type LogSummary struct {
	// Events counts the valid stored prefix (a torn tail is not counted).
	Events   int       `json:"events"`
	Turns    int       `json:"turns"`
	OpenTurn bool      `json:"openTurn"`
	Last     *EventRef `json:"lastEvent"`
	// TornTail is set when the stored log ends in a torn write that the
	// next resume would drop.
	TornTail *TornTail `json:"tornTail,omitempty"`
}

// EventRef names one event.
type EventRef struct {
	Seq  int64  `json:"seq"`
	Type string `json:"type"`
}

// TornTail is where a torn write starts and why it is one.
type TornTail struct {
	FromSeq int64  `json:"fromSeq"`
	Reason  string `json:"reason"`
}

// Invalid is the first place the log fails DSH's validation.
type Invalid struct {
	Seq     int64  `json:"seq"`
	Rule    string `json:"rule"`
	Message string `json:"message"`
}

// SessionReader is what Show reads of a corpus (one snapshot of it, for a
// consistent answer).
type SessionReader interface {
	backend.HeaderReader
	backend.LogReader
}

// Show reads everything `session show` reports of id; a corpus that
// records the DSH format its sessions came from adds it. An unknown id
// wraps backend.ErrNotFound.
func Show(ctx context.Context, view SessionReader, id string) (Session, error) {
	v, _, err := ShowEvents(ctx, view, id)
	return v, err
}

// ShowEvents is Show and the events of the valid prefix it summarized (nil
// when the log cannot be read), from one read of the log: a page that
// shows the summary and the last events reads it once.
func ShowEvents(ctx context.Context, view SessionReader, id string) (Session, []session.Event, error) {
	v, events, err := describe(ctx, view, id)
	if err != nil {
		return v, nil, err
	}
	if formats, ok := view.(backend.SourceFormatReader); ok {
		v.SourceFormat, err = formats.SourceFormat(ctx, id)
	}
	return v, events, err
}

// describe reads the header and the log summary. Facts kept beside the log
// (such as who holds the session) belong here.
func describe(ctx context.Context, view SessionReader, id string) (Session, []session.Event, error) {
	ins, err := view.Inspect(ctx, id)
	var (
		ve *session.ValidationError
		ce *backend.CorruptRowError
	)
	if errors.As(err, &ve) || errors.As(err, &ce) {
		h, herr := view.Header(ctx, id)
		if herr != nil {
			return Session{}, nil, herr
		}
		v := Session{Header: NewHeader(h)}
		if ve != nil {
			v.Invalid = &Invalid{Seq: ve.Seq, Rule: ve.Rule, Message: ve.Msg}
		} else {
			v.Unreadable = &Unreadable{Seq: ce.Seq, Reason: ce.Reason}
		}
		return v, nil, nil
	}
	if err != nil {
		return Session{}, nil, err
	}
	sum := session.Summarize(ins.Events)
	log := &LogSummary{Events: len(ins.Events), Turns: sum.Turns, OpenTurn: sum.OpenTurn}
	if len(ins.Events) > 0 {
		log.Last = &EventRef{Seq: sum.LastSeq, Type: sum.LastType}
	}
	if ins.Torn != nil {
		log.TornTail = &TornTail{FromSeq: ins.Torn.FromSeq, Reason: ins.Torn.Reason}
	}
	return Session{Header: NewHeader(ins.Header), Log: log}, ins.Events, nil
}
