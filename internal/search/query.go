package search

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/dsh-project/dsh/internal/dsherr"
)

// Query is a parsed search query (docs/search.md, "Query syntax"): terms
// and "phrases", either ending in * for a prefix, combined by AND (also
// implied between two terms), OR, NOT (after a term: a NOT b) and
// parentheses. dsh parses it itself and writes each engine's query from
// the tree, so that no text of the user's reaches an engine's own syntax.
type Query struct {
	root node
	text string
}

// String is the query as given.
func (q *Query) String() string { return q.text }

type nodeKind int

const (
	leafNode nodeKind = iota
	andNode
	orNode
)

// node is a leaf (a phrase of one or more words, the last one a prefix
// with prefix), an AND of pos without any of neg, or an OR of pos.
type node struct {
	kind   nodeKind
	words  []string // as typed, unfolded: each engine folds them itself
	prefix bool
	pos    []node
	neg    []node
}

// maxQueryLen bounds a query: a longer one is refused rather than handed
// to an engine.
const maxQueryLen = 4096

// Parse parses a query; a malformed one is a dsherr.InvalidInput error
// with a one-line message naming the problem.
func Parse(text string) (*Query, error) {
	if len(text) > maxQueryLen {
		return nil, invalid("it is longer than %d bytes", maxQueryLen)
	}
	if !utf8.ValidString(text) {
		return nil, invalid("it is not UTF-8 text")
	}
	toks, err := lex(text)
	if err != nil {
		return nil, err
	}
	if len(toks) == 0 {
		return nil, invalid("it is empty")
	}
	p := &parser{toks: toks}
	n, err := p.or()
	if err != nil {
		return nil, err
	}
	if p.i < len(p.toks) {
		return nil, invalid("unexpected %s at column %d", p.toks[p.i].describe(), p.toks[p.i].col)
	}
	return &Query{root: n, text: text}, nil
}

func invalid(format string, args ...any) error {
	return dsherr.New(dsherr.InvalidInput, "search query: "+format, args...)
}

type lexKind int

const (
	lexWord lexKind = iota
	lexPhrase
	lexAnd
	lexOr
	lexNot
	lexOpen
	lexClose
)

type lexeme struct {
	kind   lexKind
	text   string
	prefix bool
	col    int // 1-based, in characters
}

func (l lexeme) describe() string {
	switch l.kind {
	case lexAnd, lexOr, lexNot:
		return l.text
	case lexOpen:
		return `"("`
	case lexClose:
		return `")"`
	case lexPhrase:
		return "phrase"
	}
	return fmt.Sprintf("term %q", l.text)
}

// wordPunct are the characters a bare term may hold besides letters,
// digits and marks; they separate the words of the term, which is then
// searched as a phrase (hello-world as "hello world"). Every other
// character outside quotes is refused: it is some engine's syntax
// (col:term, ^term, NEAR/…, {a b}) or not text.
const wordPunct = "-_./'@#&+,!?%$"

func lex(text string) ([]lexeme, error) {
	var out []lexeme
	runes := []rune(text)
	for i := 0; i < len(runes); {
		r := runes[i]
		col := i + 1
		switch {
		case unicode.IsSpace(r):
			i++
		case r == '(':
			out = append(out, lexeme{kind: lexOpen, col: col})
			i++
		case r == ')':
			out = append(out, lexeme{kind: lexClose, col: col})
			i++
		case r == '"':
			end := i + 1
			for end < len(runes) && runes[end] != '"' {
				end++
			}
			if end == len(runes) {
				return nil, invalid("the phrase opened at column %d has no closing quote", col)
			}
			l := lexeme{kind: lexPhrase, text: string(runes[i+1 : end]), col: col}
			i = end + 1
			if i < len(runes) && runes[i] == '*' {
				l.prefix = true
				i++
			}
			if i < len(runes) && !unicode.IsSpace(runes[i]) && runes[i] != ')' && runes[i] != '(' {
				return nil, invalid("unexpected %q at column %d (leave a space after a phrase)", runes[i], i+1)
			}
			out = append(out, l)
		case r == '*':
			return nil, invalid("a * must end a term or a phrase (column %d)", col)
		case isWordRune(r):
			end := i
			for end < len(runes) && isWordRune(runes[end]) {
				end++
			}
			l := lexeme{kind: lexWord, text: string(runes[i:end]), col: col}
			switch l.text {
			case "AND":
				l.kind = lexAnd
			case "OR":
				l.kind = lexOr
			case "NOT":
				l.kind = lexNot
			}
			i = end
			if i < len(runes) && runes[i] == '*' {
				if l.kind != lexWord {
					return nil, invalid("%s* at column %d: quote it to search for the word", l.text, col)
				}
				l.prefix = true
				i++
			}
			if i < len(runes) && !unicode.IsSpace(runes[i]) && runes[i] != ')' && runes[i] != '(' {
				return nil, invalid("unexpected %q at column %d (quote a term to search for its punctuation)", runes[i], i+1)
			}
			out = append(out, l)
		default:
			return nil, invalid("unexpected %q at column %d (quote a term to search for its punctuation)", r, col)
		}
	}
	return out, nil
}

func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.IsMark(r) || unicode.Is(unicode.Co, r) || strings.ContainsRune(wordPunct, r)
}

type parser struct {
	toks  []lexeme
	i     int
	depth int
}

// maxDepth bounds the nesting of parentheses.
const maxDepth = 32

func (p *parser) peek() (lexeme, bool) {
	if p.i < len(p.toks) {
		return p.toks[p.i], true
	}
	return lexeme{}, false
}

func (p *parser) or() (node, error) {
	first, err := p.and()
	if err != nil {
		return node{}, err
	}
	alts := []node{first}
	for {
		l, ok := p.peek()
		if !ok || l.kind != lexOr {
			break
		}
		p.i++
		next, err := p.and()
		if err != nil {
			return node{}, err
		}
		alts = append(alts, next)
	}
	if len(alts) == 1 {
		return first, nil
	}
	return node{kind: orNode, pos: alts}, nil
}

func (p *parser) and() (node, error) {
	l, ok := p.peek()
	if ok && l.kind == lexNot {
		return node{}, invalid("NOT at column %d needs a term before it (write a NOT b)", l.col)
	}
	first, err := p.unit()
	if err != nil {
		return node{}, err
	}
	n := node{kind: andNode, pos: []node{first}}
	for {
		l, ok := p.peek()
		if !ok || l.kind == lexOr || l.kind == lexClose {
			break
		}
		negate := false
		switch l.kind {
		case lexAnd:
			p.i++
			if next, ok := p.peek(); ok && next.kind == lexNot {
				p.i++
				negate = true
			}
		case lexNot:
			p.i++
			negate = true
		}
		u, err := p.unit()
		if err != nil {
			return node{}, err
		}
		if negate {
			n.neg = append(n.neg, u)
		} else {
			n.pos = append(n.pos, u)
		}
	}
	if len(n.pos) == 1 && len(n.neg) == 0 {
		return first, nil
	}
	return n, nil
}

func (p *parser) unit() (node, error) {
	l, ok := p.peek()
	if !ok {
		if p.i == 0 {
			return node{}, invalid("it is empty")
		}
		return node{}, invalid("%s at the end needs a term after it", p.toks[p.i-1].describe())
	}
	switch l.kind {
	case lexOpen:
		if p.depth >= maxDepth {
			return node{}, invalid("parentheses nest deeper than %d", maxDepth)
		}
		p.i++
		p.depth++
		n, err := p.or()
		if err != nil {
			return node{}, err
		}
		p.depth--
		if c, ok := p.peek(); !ok || c.kind != lexClose {
			return node{}, invalid(`the "(" at column %d is not closed`, l.col)
		}
		p.i++
		return n, nil
	case lexWord, lexPhrase:
		p.i++
		words := splitWords(l.text)
		if len(words) == 0 {
			return node{}, invalid("%s at column %d has no letters or digits to search for", l.describe(), l.col)
		}
		return node{kind: leafNode, words: words, prefix: l.prefix}, nil
	}
	return node{}, invalid("unexpected %s at column %d", l.describe(), l.col)
}

// splitWords cuts a term or phrase into the words an index holds.
func splitWords(s string) []string {
	toks := Tokens(s, FoldCase)
	out := make([]string, len(toks))
	for i, t := range toks {
		out[i] = s[t.Start:t.End]
	}
	return out
}

// FTS5 is the query as an SQLite FTS5 MATCH expression: every phrase a
// quoted string of words (which hold only letters and digits), the
// operators explicit and every group parenthesized.
func (q *Query) FTS5() string {
	var b strings.Builder
	writeFTS5(&b, q.root)
	return b.String()
}

func writeFTS5(b *strings.Builder, n node) {
	switch n.kind {
	case leafNode:
		b.WriteByte('"')
		b.WriteString(strings.Join(n.words, " "))
		b.WriteByte('"')
		if n.prefix {
			b.WriteString(" *")
		}
	case orNode:
		writeJoined(b, n.pos, " OR ", writeFTS5)
	case andNode:
		if len(n.neg) > 0 {
			b.WriteByte('(')
		}
		writeJoined(b, n.pos, " AND ", writeFTS5)
		if len(n.neg) > 0 {
			b.WriteString(" NOT ")
			writeJoined(b, n.neg, " OR ", writeFTS5)
			b.WriteByte(')')
		}
	}
}

func writeJoined(b *strings.Builder, ns []node, op string, write func(*strings.Builder, node)) {
	b.WriteByte('(')
	for i, n := range ns {
		if i > 0 {
			b.WriteString(op)
		}
		write(b, n)
	}
	b.WriteByte(')')
}

// TSQuery is the query as PostgreSQL tsquery text for to_tsquery('simple',
// …): every word a quoted lexeme (letters and digits only), a phrase its
// words joined by <->, a prefix :*.
func (q *Query) TSQuery() string {
	var b strings.Builder
	writeTSQuery(&b, q.root)
	return b.String()
}

func writeTSQuery(b *strings.Builder, n node) {
	switch n.kind {
	case leafNode:
		b.WriteByte('(')
		for i, w := range n.words {
			if i > 0 {
				b.WriteString(" <-> ")
			}
			b.WriteByte('\'')
			b.WriteString(strings.ReplaceAll(strings.ReplaceAll(w, `\`, `\\`), `'`, `''`))
			b.WriteByte('\'')
			if n.prefix && i == len(n.words)-1 {
				b.WriteString(":*")
			}
		}
		b.WriteByte(')')
	case orNode:
		writeJoined(b, n.pos, " | ", writeTSQuery)
	case andNode:
		b.WriteByte('(')
		writeJoined(b, n.pos, " & ", writeTSQuery)
		for _, neg := range n.neg {
			b.WriteString(" & !")
			writeTSQuery(b, neg)
		}
		b.WriteByte(')')
	}
}

// Matcher tests texts against a query as an index folding fold would: the
// streaming search of a corpus read in place, and the highlights of every
// hit's snippet.
type Matcher struct {
	q    *Query
	fold Fold
	// folded words of every leaf, computed once
	leaves map[*node][]string
}

// NewMatcher returns q's matcher under fold.
func NewMatcher(q *Query, fold Fold) *Matcher {
	m := &Matcher{q: q, fold: fold, leaves: map[*node][]string{}}
	m.prepare(&q.root)
	return m
}

func (m *Matcher) prepare(n *node) {
	if n.kind == leafNode {
		ws := make([]string, len(n.words))
		for i, w := range n.words {
			ws[i] = foldWord(w, m.fold)
		}
		m.leaves[n] = ws
		return
	}
	for i := range n.pos {
		m.prepare(&n.pos[i])
	}
	for i := range n.neg {
		m.prepare(&n.neg[i])
	}
}

// Match reports whether toks (Tokens of a text under the matcher's fold)
// match the query, and marks in hit the tokens of the phrases that match
// outside a NOT (the highlights), when hit is not nil.
func (m *Matcher) Match(toks []Token, hit []bool) bool {
	return m.eval(&m.q.root, toks, hit)
}

func (m *Matcher) eval(n *node, toks []Token, hit []bool) bool {
	switch n.kind {
	case leafNode:
		return m.leaf(m.leaves[n], n.prefix, toks, hit)
	case orNode:
		any := false
		for i := range n.pos {
			if m.eval(&n.pos[i], toks, hit) {
				any = true
			}
		}
		return any
	}
	all := true
	for i := range n.pos {
		if !m.eval(&n.pos[i], toks, hit) {
			all = false
		}
	}
	if !all {
		return false
	}
	for i := range n.neg {
		if m.eval(&n.neg[i], toks, nil) {
			return false
		}
	}
	return true
}

func (m *Matcher) leaf(words []string, prefix bool, toks []Token, hit []bool) bool {
	found := false
	for i := 0; i+len(words) <= len(toks); i++ {
		ok := true
		for k, w := range words {
			t := toks[i+k].Text
			if k == len(words)-1 && prefix {
				ok = strings.HasPrefix(t, w)
			} else {
				ok = t == w
			}
			if !ok {
				break
			}
		}
		if !ok {
			continue
		}
		found = true
		if hit == nil {
			return true
		}
		for k := range words {
			hit[i+k] = true
		}
	}
	return found
}
