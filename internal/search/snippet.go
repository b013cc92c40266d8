package search

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// The marker pair around each highlighted word of a snippet (in every
// output format; docs/search.md).
const (
	MarkStart = "«"
	MarkEnd   = "»"
	// Ellipsis marks text left out at either end of a snippet.
	Ellipsis = "…"
)

// Snippet sizes, in words: before the first highlighted word, and in all.
const (
	snippetBefore = 8
	snippetWords  = 32
	// snippetWordBytes shortens a very long word (a hash, base64) in a
	// snippet.
	snippetWordBytes = 80
)

// Span is a range of bytes of a snippet, [Start, End).
type Span struct{ Start, End int }

// Snippet is a short extract of text around the first highlighted token,
// whitespace collapsed to single spaces, each highlighted token between
// MarkStart and MarkEnd; hit is as Matcher.Match marked it for toks.
func Snippet(text string, toks []Token, hit []bool) string {
	s, _ := SnippetMarks(text, toks, hit)
	return s
}

// SnippetMarks is Snippet and where its highlighted words are: each span
// holds one word with its MarkStart and MarkEnd. A page draws a highlight
// from the spans, not from the markers, which the text may hold too.
func SnippetMarks(text string, toks []Token, hit []bool) (string, []Span) {
	if len(toks) == 0 {
		return clip(collapse(text), snippetWordBytes*4), nil
	}
	first := 0
	for i, h := range hit {
		if h {
			first = i
			break
		}
	}
	from := max(first-snippetBefore, 0)
	to := min(from+snippetWords, len(toks))
	var b strings.Builder
	var marks []Span
	if from > 0 || strings.TrimSpace(text[:toks[from].Start]) != "" {
		b.WriteString(Ellipsis + " ")
	}
	for i := from; i < to; i++ {
		if i > from {
			b.WriteString(collapse(text[toks[i-1].End:toks[i].Start]))
		}
		word := clip(text[toks[i].Start:toks[i].End], snippetWordBytes)
		if hit[i] {
			start := b.Len()
			b.WriteString(MarkStart + word + MarkEnd)
			marks = append(marks, Span{start, b.Len()})
		} else {
			b.WriteString(word)
		}
	}
	if to < len(toks) {
		b.WriteString(" " + Ellipsis)
	} else if tail := text[toks[to-1].End:]; strings.TrimSpace(tail) != "" {
		b.WriteString(collapse(strings.TrimRightFunc(tail, unicode.IsSpace)))
	}
	// Nothing leads the first word or the ellipsis: only the end trims.
	return strings.TrimRightFunc(b.String(), unicode.IsSpace), marks
}

// collapse turns each run of whitespace into one space, and shortens a
// long run of punctuation.
func collapse(s string) string {
	s = clip(s, snippetWordBytes)
	var b strings.Builder
	space := false
	for _, r := range s {
		if unicode.IsSpace(r) {
			space = true
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
	}
	if space {
		b.WriteByte(' ')
	}
	return b.String()
}

// clip shortens s to at most n bytes on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + Ellipsis
}
