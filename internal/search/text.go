// Package search owns dsh search: which text of a log is searched (Text,
// the rule of docs/search.md), the query language dsh parses itself and
// translates for each engine (Parse; SQLite FTS5 MATCH, PostgreSQL
// tsquery), the snippets, and the streaming matcher that searches a corpus
// read in place with the same tokens the stores index.
//
// A store keeps the index in SQL (migration 0013's triggers and
// back-fill); the tests hold Go, SQLite and PostgreSQL to the same text and
// the same matches on the same logs.
package search

import (
	"strings"

	"github.com/dsh-project/dsh/internal/jsjson"
	"github.com/dsh-project/dsh/internal/session"
)

// The event types whose text is searched: the messages of the model's
// transcript. A message's text is in its content blocks; the chunks
// streamed ahead of an assistant/message repeat its text and are not
// searched again.
const (
	TypeUserMessage      = "user/message"
	TypeAssistantMessage = "assistant/message"
	TypeToolResult       = "tool/result"
)

// Types lists the searched event types, in the order the help names them.
var Types = []string{TypeUserMessage, TypeAssistantMessage, TypeToolResult}

// IsType reports whether t is one of Types.
func IsType(t string) bool {
	return t == TypeUserMessage || t == TypeAssistantMessage || t == TypeToolResult
}

// Text returns the searched text of e: ok false for an event whose type is
// not searched. The message is data (user/message) or the last member
// "message" of data (the others), an object; its text is the string "text"
// of each block of its last member "content" (an array) whose "type" is
// "text", and of each such block inside the "content" array of a block of
// type "tool-result" (a format 0-3 tool result; format 4 puts the text
// blocks in the message's content directly), joined by "\n" in order. The
// last member of a name counts, as JSON.parse keeps it; a block of another
// type (images, reasoning, tool calls) adds nothing.
func Text(e session.Event) (string, bool) {
	if !IsType(e.Type) {
		return "", false
	}
	data, err := jsjson.ParseObject(e.Data)
	if err != nil {
		return "", true
	}
	msg := []jsjson.Member(data)
	if e.Type != TypeUserMessage {
		m, ok := jsjson.LastMember(data, "message")
		if !ok {
			return "", true
		}
		if msg, err = jsjson.ParseObject(m.Value); err != nil {
			return "", true
		}
	}
	var parts []string
	for _, b := range blocks(msg) {
		switch typeOf(b) {
		case "text":
			if s, ok := textOf(b); ok {
				parts = append(parts, s)
			}
		case "tool-result":
			for _, inner := range blocks(b) {
				if typeOf(inner) != "text" {
					continue
				}
				if s, ok := textOf(inner); ok {
					parts = append(parts, s)
				}
			}
		}
	}
	return strings.Join(parts, "\n"), true
}

// blocks are the objects of the last member "content" of members, when it
// is an array.
func blocks(members []jsjson.Member) [][]jsjson.Member {
	c, ok := jsjson.LastMember(members, "content")
	if !ok {
		return nil
	}
	elems, ok := jsjson.ArrayElements(c.Value)
	if !ok {
		return nil
	}
	var out [][]jsjson.Member
	for _, el := range elems {
		if b, err := jsjson.ParseObject(el); err == nil {
			out = append(out, b)
		}
	}
	return out
}

func typeOf(block []jsjson.Member) string {
	m, ok := jsjson.LastMember(block, "type")
	if !ok {
		return ""
	}
	s, _ := jsjson.StringValue(m.Value)
	return s
}

func textOf(block []jsjson.Member) (string, bool) {
	m, ok := jsjson.LastMember(block, "text")
	if !ok {
		return "", false
	}
	return jsjson.StringValue(m.Value)
}
