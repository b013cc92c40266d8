package search

import (
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Fold says how tokens are compared: both engines fold case; SQLite's
// FTS5 tokenizer (unicode61 remove_diacritics 2) also folds the
// diacritics of Latin letters, PostgreSQL's 'simple' configuration keeps
// them (docs/search.md, "Engine differences").
type Fold int

const (
	// FoldCase folds case only (PostgreSQL).
	FoldCase Fold = iota
	// FoldDiacritics folds case and Latin diacritics (SQLite, --source).
	FoldDiacritics
)

// Token is one word of a text: a run of letters, digits and private-use
// characters (FTS5's unicode61 token characters; PostgreSQL's index reads
// the text with every other character replaced by a space, so that both
// engines cut the same words), folded.
type Token struct {
	Text string
	// Start and End are byte offsets of the word in the text.
	Start, End int
}

func isTokenRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.Is(unicode.Co, r)
}

// Tokens cuts text into its folded words.
func Tokens(text string, fold Fold) []Token {
	var out []Token
	start := -1
	for i, r := range text {
		if isTokenRune(r) && r != utf8.RuneError {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			out = append(out, Token{Text: foldWord(text[start:i], fold), Start: start, End: i})
			start = -1
		}
	}
	if start >= 0 {
		out = append(out, Token{Text: foldWord(text[start:], fold), Start: start, End: len(text)})
	}
	return out
}

// foldWord lower-cases word and, with FoldDiacritics, takes the diacritics
// off Latin letters (a letter whose canonical decomposition is a Latin base
// letter and combining marks becomes the base letter).
func foldWord(word string, fold Fold) string {
	b := make([]rune, 0, len(word))
	for _, r := range word {
		r = unicode.ToLower(r)
		if fold == FoldDiacritics && r >= 0xC0 && isLatin(r) {
			r = baseLetter(r)
		}
		b = append(b, r)
	}
	return string(b)
}

func isLatin(r rune) bool {
	return unicode.Is(unicode.Latin, r)
}

// baseLetter is r without its diacritics: the first rune of its canonical
// decomposition when the rest are combining marks.
func baseLetter(r rune) rune {
	d := norm.NFD.String(string(r))
	base, size := utf8.DecodeRuneInString(d)
	if size == len(d) {
		return r
	}
	for _, m := range d[size:] {
		if !unicode.Is(unicode.Mn, m) {
			return r
		}
	}
	return base
}
