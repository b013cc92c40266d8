package subagent

import (
	"github.com/dsh-project/dsh/internal/jsjson"
	"github.com/dsh-project/dsh/internal/session"
)

// eventShapes is how the events dsh writes into a child's log are shaped
// in the child's session format: format 0 as DSH 0.1.0-rc.8 writes them,
// formats 2–4 as the later writers do (docs/compatibility.md, "What dsh
// writes into a later-format log"), so that an exported log is one the DSH
// release of that format reads. The format is the header's version, which
// never changes over a session's life.
type eventShapes struct {
	later bool
}

// taggedEndSeedData closes an inherited prefix in the later formats.
var taggedEndSeedData = []byte(`{"inherited":true}`)

func shapesFor(version int64) eventShapes {
	return eventShapes{later: session.IsLaterFormat(version)}
}

// descriptorVersion is the subagent/descriptor version a new child's
// descriptor carries: every child of a later format holds version 3, and
// the later releases read no other.
func (s eventShapes) descriptorVersion() int {
	if s.later {
		return DescriptorVersionLater
	}
	return DescriptorVersion
}

// inheritedMarker is the session/end-seed payload that closes a fork
// child's inherited prefix: the later formats tag it (its seq is then the
// cut), format 0 does not (the header's seedLength is).
func (s eventShapes) inheritedMarker() []byte {
	if s.later {
		return taggedEndSeedData
	}
	return endSeedData
}

// constructorMarker reports whether a continuable child's creation seed
// ends with the untagged session/end-seed its Session constructor adds:
// rc.8 writes it; the later formats' children have none (an unseeded later
// child holds no end-seed at creation at all).
func (s eventShapes) constructorMarker() bool { return !s.later }

// userMessage is the user message a turn answers: the caller's own prompt
// (sender "", source {kind:"user"}) or a message relayed from the parent
// session sender. Format 0 records a relay with DSH 0.1.0-rc.8's
// coordinator source and the text alone; the later formats with the
// agent-message source and the "Agent <id> sent a message: " block before
// the text, as their logs show.
func (s eventShapes) userMessage(id, text, sender string) []byte {
	switch {
	case sender == "":
		return userMessageData(id, text, userSource)
	case !s.later:
		return userMessageData(id, text, relaySource(sender))
	}
	b := []byte(`{"content":[{"type":"text","text":`)
	b = jsjson.AppendString(b, "Agent "+sender+" sent a message: ")
	b = append(b, `},{"type":"text","text":`...)
	b = jsjson.AppendString(b, text)
	b = append(b, `}],"source":{"kind":"agent-message","form":"relay","senderSessionId":`...)
	b = jsjson.AppendString(b, sender)
	b = append(b, `},"role":"user","id":`...)
	b = jsjson.AppendString(b, id)
	return append(b, '}')
}

// assistantMessage is an assistant/message payload. From format 2 on the
// streaming deltas are no longer events but the message's required
// `stream` array, so a later format's payload ends with the stream that
// produced the reply: one text block (start, its text, end), then finish.
// time stamps the stream's records.
func (s eventShapes) assistantMessage(turn, step int64, id, reply string, r route, time int64) []byte {
	b := assistantMessageData(turn, step, id, reply, r)
	if !s.later {
		return b
	}
	b = append(b[:len(b)-1], `,"stream":[`...)
	if reply != "" {
		b = appendStreamChunk(b, time, []byte(`{"type":"block-start","index":0,"blockType":"text"}`))
		b = append(b, `,{"type":"text-chunks","time0":`...)
		b = jsjson.AppendInt(b, time)
		b = append(b, `,"index":0,"dt":[],"texts":[`...)
		b = jsjson.AppendString(b, reply)
		b = append(b, `]},`...)
		end := jsjson.AppendString([]byte(`{"type":"block-end","index":0,"block":{"type":"text","text":`), reply)
		b = append(appendStreamChunk(b, time, append(end, "}}"...)), ',')
	}
	b = appendStreamChunk(b, time, []byte(`{"type":"finish","reason":{"kind":"stop"}}`))
	return append(b, "]}"...)
}

// appendStreamChunk appends one {"type":"chunk","time","chunk"} stream
// record holding chunk (raw JSON).
func appendStreamChunk(b []byte, time int64, chunk []byte) []byte {
	b = append(b, `{"type":"chunk","time":`...)
	b = jsjson.AppendInt(b, time)
	b = append(b, `,"chunk":`...)
	b = append(b, chunk...)
	return append(b, '}')
}
