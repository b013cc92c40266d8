package render

import (
	"strconv"

	"github.com/dsh-project/dsh/internal/search"
)

// Search prints dsh search's hits, best first: JSON one array, JSONL one
// hit per line, a table or TSV one line per hit (SESSION, SEQ, TIME, TYPE,
// SNIPPET), every stored string escaped for people.
func (p *Printer) Search(hits []search.Hit) error {
	l := NewList(p, []Column[search.Hit]{
		{Header: "SESSION", Value: func(h search.Hit) string { return h.SessionID }},
		{Header: "SEQ", Value: func(h search.Hit) string { return strconv.FormatInt(h.Seq, 10) }},
		{Header: "TIME", Value: func(h search.Hit) string { return Millis(h.Time) }},
		{Header: "TYPE", Value: func(h search.Hit) string { return h.Type }},
		{Header: "SNIPPET", Value: func(h search.Hit) string { return h.Snippet }},
	})
	for _, h := range hits {
		if err := l.Add(h); err != nil {
			return err
		}
	}
	return l.Close()
}
