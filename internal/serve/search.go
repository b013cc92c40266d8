package serve

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/dsh-project/dsh/internal/corpus"
	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/location"
	"github.com/dsh-project/dsh/internal/render"
	"github.com/dsh-project/dsh/internal/report"
	"github.com/dsh-project/dsh/internal/search"
)

// defaultHits is how many hits a search returns unless ?n= says, as dsh
// search's -n.
const defaultHits = 20

// searchQuery is a search request: ?q= and dsh search's flags as
// parameters (parent, scope, type, since, until, n), a page.
type searchQuery struct {
	text      string
	query     *search.Query
	hasParent bool
	parent    string
	scope     corpus.Scope
	opts      search.Options
	page      pageParams
}

// parseSearch reads a search request, checking it in the order and with
// the messages dsh search checks its flags (named without dashes).
func parseSearch(r *http.Request) (searchQuery, error) {
	q := r.URL.Query()
	sq := searchQuery{text: q.Get("q"), hasParent: q.Has("parent")}
	var err error
	if !sq.hasParent && q.Has("scope") {
		return sq, dsherr.New(dsherr.Usage, "scope needs parent")
	}
	if sq.scope, err = parseScopeOr(q, corpus.ScopeDescendants); err != nil {
		return sq, err
	}
	sq.opts.Limit = defaultHits
	if v := q.Get("n"); q.Has("n") {
		n, err := strconv.Atoi(v)
		if err != nil {
			return sq, dsherr.New(dsherr.Usage, "n: %q is not a number", v)
		}
		if n < 0 {
			return sq, dsherr.New(dsherr.Usage, "n: %d is negative", n)
		}
		sq.opts.Limit = n
	}
	sq.opts.Types = splitValues(q["type"])
	if err := search.CheckTypes("type", sq.opts.Types); err != nil {
		return sq, err
	}
	now := time.Now()
	if sq.opts.Since, err = search.ParseTime("since", q.Get("since"), now); err != nil {
		return sq, err
	}
	if sq.opts.Until, err = search.ParseTime("until", q.Get("until"), now); err != nil {
		return sq, err
	}
	if sq.hasParent {
		if sq.parent, err = sessionID(r, "parent"); err != nil {
			return sq, err
		}
	}
	if sq.query, err = search.Parse(sq.text); err != nil {
		return sq, err
	}
	sq.page, err = parsePage(q, defaultPage)
	return sq, err
}

// search runs sq as dsh search does: over every session, or over the
// parent and the sessions its descendants listing shows below it.
func (s *Server) search(ctx context.Context, sq searchQuery) (*search.Result, error) {
	o := sq.opts
	if sq.hasParent {
		if _, err := s.corpus.Reader.Header(ctx, sq.parent); err != nil {
			return nil, s.corpus.LookupError(sq.parent, err)
		}
		listing, err := s.listScope(ctx, sq.parent, corpus.ScopeDescendants)
		if err != nil {
			return nil, err
		}
		o.Sessions = search.Subtree(sq.parent, listing.Rows, sq.scope == corpus.ScopeChildren)
	}
	var res *search.Result
	err := s.corpus.View(ctx, func(view location.Reader) error {
		var err error
		res, err = search.Run(ctx, view, sq.query, o)
		return err
	})
	return res, err
}

// hitKey names a hit for a page's cursor.
func hitKey(h search.Hit) string { return strconv.FormatInt(h.Seq, 10) + "/" + h.SessionID }

// apiSearch is `dsh search Q [--parent ID --scope S] [--type T]
// [--since] [--until] [-n N] -o json`, paged.
func (s *Server) apiSearch(w http.ResponseWriter, r *http.Request) {
	sq, err := parseSearch(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	// A page needs the hits up to its end, and one more to know there is
	// a next: the search builds no snippet past it (the engine still ranks
	// every match). A cursor pageOf refuses is left to it.
	if pos, _, err := decodeCursor(sq.page.cursor); sq.page.cursor == "" || err == nil && pos >= 0 {
		if end := pos + int64(sq.page.limit) + 1; sq.opts.Limit == 0 || int64(sq.opts.Limit) > end {
			sq.opts.Limit = int(end)
		}
	}
	res, err := s.search(r.Context(), sq)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	page, next, err := pageOf(res.Hits, hitKey, sq.page)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	setNext(w, r, next)
	s.answer(w, r, func(p *render.Printer) error { return p.Search(page) })
}

// snippetPart is a run of a snippet's text, highlighted or not.
type snippetPart struct {
	Text string
	Mark bool
}

// hitLine is one hit as the search page shows it.
type hitLine struct {
	search.Hit
	Parts []snippetPart
}

// snippetParts cuts h's snippet at its marks: the highlighted words
// without their markers, and the text between them as it is (the
// template escapes both).
func snippetParts(h search.Hit) []snippetPart {
	var parts []snippetPart
	at := 0
	for _, m := range h.Marks {
		if m.Start > at {
			parts = append(parts, snippetPart{Text: h.Snippet[at:m.Start]})
		}
		word := strings.TrimSuffix(strings.TrimPrefix(h.Snippet[m.Start:m.End], search.MarkStart), search.MarkEnd)
		parts = append(parts, snippetPart{Text: word, Mark: true})
		at = m.End
	}
	if at < len(h.Snippet) {
		parts = append(parts, snippetPart{Text: h.Snippet[at:]})
	}
	return parts
}

// damagedLine is a damaged log of the searched scope as the page shows it.
type damagedLine struct {
	ID, Note string
}

// pageSearch is the search page: the form, and the hits of its query.
func (s *Server) pageSearch(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	// The form's empty boxes say nothing.
	for _, k := range []string{"parent", "since", "until", "n", "type"} {
		if q.Has(k) && strings.Join(q[k], "") == "" {
			q.Del(k)
		}
	}
	if !q.Has("parent") {
		q.Del("scope")
	}
	r.URL.RawQuery = q.Encode()
	data := struct {
		pageBase
		Query, Parent, Scope, Since, Until, N string
		Types                                 []string
		AllTypes                              []string
		// Asked: a query was typed (an empty box shows the form alone).
		Asked bool
		Err   string
		Hits  []hitLine
		// More is the API's address for every hit when the page drew
		// only the first pageHits.
		More    string
		Damaged []damagedLine
	}{pageBase: pageBase{Title: "Search", Where: s.cfg.Where}, Query: q.Get("q"), Parent: q.Get("parent"), Scope: q.Get("scope"),
		Since: q.Get("since"), Until: q.Get("until"), N: q.Get("n"), Types: splitValues(q["type"]), AllTypes: search.Types,
		Asked: strings.TrimSpace(q.Get("q")) != ""}
	if data.N == "" {
		data.N = strconv.Itoa(defaultHits)
	}
	if !data.Asked {
		s.execute(w, r, s.pages.search, data)
		return
	}
	sq, err := parseSearch(r)
	// A page draws at most pageHits, n=0 (all) included: one more is
	// asked for to know whether there are more.
	capped := sq.opts.Limit == 0 || sq.opts.Limit > s.pageHits
	if capped {
		sq.opts.Limit = s.pageHits + 1
	}
	var res *search.Result
	if err == nil {
		res, err = s.search(r.Context(), sq)
	}
	if err != nil {
		// The form stays, with what was typed and what is wrong with it.
		data.Err = err.Error()
		s.executeStatus(w, r, httpStatus(report.ErrorCode(err), err), s.pages.search, data)
		return
	}
	if capped && len(res.Hits) > s.pageHits {
		res.Hits = res.Hits[:s.pageHits]
		data.More = "/api/v1/search?" + r.URL.RawQuery
	}
	for _, h := range res.Hits {
		data.Hits = append(data.Hits, hitLine{Hit: h, Parts: snippetParts(h)})
	}
	for _, d := range res.Damaged {
		from := int64(-1)
		if d.FromSeq != nil {
			from = *d.FromSeq
		}
		data.Damaged = append(data.Damaged, damagedLine{ID: d.ID, Note: damageNote(d.Damage, from, "searched")})
	}
	s.execute(w, r, s.pages.search, data)
}
