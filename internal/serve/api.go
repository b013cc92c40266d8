package serve

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/dsh-project/dsh/internal/corpus"
	"github.com/dsh-project/dsh/internal/diagnose"
	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/leases"
	"github.com/dsh-project/dsh/internal/location"
	"github.com/dsh-project/dsh/internal/render"
	"github.com/dsh-project/dsh/internal/report"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/subagent"
)

// Page sizes: a request asks for up to maxPage items (more is refused);
// one that does not say gets defaultPage.
const (
	defaultPage = 500
	maxPage     = 5000
)

var (
	errMethod = dsherr.New(dsherr.Usage, "only GET and HEAD are served: dsh serve is read-only")
	errHost   = dsherr.New(dsherr.Usage, "the Host header does not name a loopback address; without --token dsh serve answers only requests to localhost")
	errToken  = dsherr.New(dsherr.Unauthorized, "missing or wrong token")
)

func (s *Server) routes() {
	m := s.mux
	m.HandleFunc("GET /api/v1/version", s.apiVersion)
	m.HandleFunc("GET /api/v1/sessions", s.apiSessions)
	m.HandleFunc("GET /api/v1/sessions/{id}", s.apiSession)
	m.HandleFunc("GET /api/v1/sessions/{id}/children", s.apiChildren)
	m.HandleFunc("GET /api/v1/sessions/{id}/usage", s.apiSessionUsage)
	m.HandleFunc("GET /api/v1/usage", s.apiUsage)
	m.HandleFunc("GET /api/v1/search", s.apiSearch)
	m.HandleFunc("GET /api/v1/diagnose", s.apiDiagnose)
	m.HandleFunc("GET /api/v1/leases", s.apiLeases)
	m.HandleFunc("GET /api/v1/events", s.apiEvents)
	m.HandleFunc("GET /api/", func(w http.ResponseWriter, r *http.Request) {
		s.fail(w, r, dsherr.New(dsherr.NotFound, "no API endpoint %s", r.URL.Path))
	})
	m.HandleFunc("GET /{$}", s.pageRoots)
	m.HandleFunc("GET /sessions/{id}", s.pageSession)
	m.HandleFunc("GET /diagnose", s.pageDiagnose)
	m.HandleFunc("GET /search", s.pageSearch)
	m.HandleFunc("GET /assets/app.js", s.asset("app.js", "text/javascript; charset=utf-8"))
	m.HandleFunc("GET /assets/style.css", s.asset("style.css", "text/css; charset=utf-8"))
	m.HandleFunc("GET /", func(w http.ResponseWriter, r *http.Request) {
		s.fail(w, r, dsherr.New(dsherr.NotFound, "no page %s", r.URL.Path))
	})
}

// httpStatus is the HTTP status an error code is answered with.
func httpStatus(code dsherr.Code, err error) int {
	switch {
	case errors.Is(err, errMethod):
		return http.StatusMethodNotAllowed
	case errors.Is(err, errHost):
		return http.StatusMisdirectedRequest
	}
	switch code {
	case dsherr.NotFound:
		return http.StatusNotFound
	case dsherr.Usage, dsherr.InvalidInput:
		return http.StatusBadRequest
	case dsherr.Unauthorized:
		return http.StatusUnauthorized
	case dsherr.InvalidLog, dsherr.UnsupportedFormat:
		return http.StatusUnprocessableEntity
	case dsherr.StoreUnavailable, dsherr.Cancelled:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// fail answers with err: the CLI's JSON error document under /api/, an
// error page elsewhere.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	code := report.ErrorCode(err)
	status := httpStatus(code, err)
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="dsh"`)
	}
	if !strings.HasPrefix(r.URL.Path, "/api/") {
		s.pages.fail(w, status, code, err.Error())
		return
	}
	var buf bytes.Buffer
	_ = render.New(&buf, render.Options{Format: render.JSON}).JSON(report.NewError(code, err.Error()))
	writeJSON(w, status, buf.Bytes())
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// answer writes what build printed as JSON, or the error.
func (s *Server) answer(w http.ResponseWriter, r *http.Request, build func(p *render.Printer) error) {
	var buf bytes.Buffer
	if err := build(render.New(&buf, render.Options{Format: render.JSON})); err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, buf.Bytes())
}

func (s *Server) apiVersion(w http.ResponseWriter, r *http.Request) {
	s.answer(w, r, func(p *render.Printer) error {
		v, err := report.BuildVersion()
		if err != nil {
			return err
		}
		return p.JSON(v)
	})
}

// sessionID is the {id} of a request, checked as the CLI checks an id.
func sessionID(r *http.Request, what string) (string, error) {
	id := r.PathValue("id")
	if what != "" {
		id = r.URL.Query().Get(what)
	}
	return id, session.CheckID(id)
}

// pageParams are a paged request's cursor and size.
type pageParams struct {
	cursor string
	limit  int
}

func parsePage(q url.Values, def int) (pageParams, error) {
	p := pageParams{cursor: q.Get("cursor"), limit: def}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxPage {
			return p, dsherr.New(dsherr.Usage, "limit %q: want a number from 1 to %d", v, maxPage)
		}
		p.limit = n
	}
	return p, nil
}

// A cursor is where the next page starts: a position (a listing's offset,
// or the createdAt of the last root served) and the id of the last item
// served, which a listing that changed in between is searched for.
func encodeCursor(pos int64, lastID string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(pos, 10) + ":" + lastID))
}

func decodeCursor(c string) (pos int64, lastID string, err error) {
	raw, err := base64.RawURLEncoding.DecodeString(c)
	at, id, ok := strings.Cut(string(raw), ":")
	n, aerr := strconv.ParseInt(at, 10, 64)
	if err != nil || !ok || aerr != nil {
		return 0, "", dsherr.New(dsherr.Usage, "cursor %q: not one this server gave", c)
	}
	return n, id, nil
}

// pageRows cuts one page out of a listing's rows, and the cursor of the
// next ("" at the end).
func pageRows(rows []subagent.Row, p pageParams) ([]subagent.Row, string, error) {
	return pageOf(rows, func(r subagent.Row) string { return r.ID }, p)
}

// pageOf cuts one page out of items, each named by id, and the cursor of
// the next ("" at the end).
func pageOf[T any](items []T, id func(T) string, p pageParams) ([]T, string, error) {
	start := 0
	if p.cursor != "" {
		n, last, err := decodeCursor(p.cursor)
		if err == nil && n < 0 {
			err = dsherr.New(dsherr.Usage, "cursor %q: not one this server gave", p.cursor)
		}
		if err != nil {
			return nil, "", err
		}
		start = int(min(n, int64(len(items))))
		if start == 0 || id(items[start-1]) != last {
			for i, it := range items {
				if id(it) == last {
					start = i + 1
					break
				}
			}
		}
	}
	end := min(start+p.limit, len(items))
	next := ""
	if end < len(items) {
		next = encodeCursor(int64(end), id(items[end-1]))
	}
	return items[start:end], next, nil
}

// setNext tells a client where the next page is: a Link header (RFC 8288)
// and the bare cursor.
func setNext(w http.ResponseWriter, r *http.Request, next string) {
	if next == "" {
		return
	}
	q := r.URL.Query()
	q.Set("cursor", next)
	w.Header().Set("Link", "<"+r.URL.EscapedPath()+"?"+q.Encode()+`>; rel="next"`)
	w.Header().Set("X-Next-Cursor", next)
}

// rootsQuery is one page of root sessions, filtered by a substring of the
// id, cwd or agent preset.
type rootsQuery struct {
	filter string
	page   pageParams
}

func parseRoots(q url.Values, def int) (rootsQuery, error) {
	p, err := parsePage(q, def)
	return rootsQuery{filter: q.Get("q"), page: p}, err
}

// roots reads one page of root sessions in (createdAt, id) order.
func (s *Server) roots(ctx context.Context, rq rootsQuery) ([]report.Header, string, error) {
	var after struct {
		createdAt int64
		id        string
		seen      bool
	}
	if rq.page.cursor != "" {
		var err error
		if after.createdAt, after.id, err = decodeCursor(rq.page.cursor); err != nil {
			return nil, "", err
		}
	}
	needle := strings.ToLower(rq.filter)
	var out []report.Header
	next := ""
	errFull := errors.New("page full")
	err := s.corpus.Reader.RootHeaders(ctx, false, func(h session.Header) error {
		if rq.page.cursor != "" && !after.seen {
			// The store's order ties by id in its own collation: skip to
			// the cursor's session rather than compare ids here.
			if h.CreatedAt < after.createdAt || h.CreatedAt == after.createdAt && h.ID != after.id {
				return nil
			}
			after.seen = true
			if h.ID == after.id {
				return nil
			}
		}
		if needle != "" && !matches(h, needle) {
			return nil
		}
		if len(out) == rq.page.limit {
			last := out[len(out)-1]
			next = encodeCursor(last.CreatedAt, last.ID)
			return errFull
		}
		out = append(out, report.NewHeader(h))
		return nil
	})
	if err != nil && !errors.Is(err, errFull) {
		return nil, "", err
	}
	return out, next, nil
}

func matches(h session.Header, needle string) bool {
	for _, s := range []*string{&h.ID, h.Cwd, h.AgentPreset} {
		if s != nil && strings.Contains(strings.ToLower(*s), needle) {
			return true
		}
	}
	return false
}

func (s *Server) apiSessions(w http.ResponseWriter, r *http.Request) {
	rq, err := parseRoots(r.URL.Query(), defaultPage)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	hs, next, err := s.roots(r.Context(), rq)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	setNext(w, r, next)
	s.answer(w, r, func(p *render.Printer) error {
		l := render.NewList[report.Header](p, nil)
		for _, h := range hs {
			if err := l.Add(h); err != nil {
				return err
			}
		}
		return l.Close()
	})
}

// show is `session show`'s view of id, and the events it summarized, from
// one snapshot and one read of the log.
func (s *Server) show(ctx context.Context, id string) (v report.Session, events []session.Event, err error) {
	err = s.corpus.View(ctx, func(view location.Reader) error {
		v, events, err = report.ShowEvents(ctx, view, id)
		return err
	})
	return v, events, s.corpus.LookupError(id, err)
}

func (s *Server) apiSession(w http.ResponseWriter, r *http.Request) {
	id, err := sessionID(r, "")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.answer(w, r, func(p *render.Printer) error {
		v, _, err := s.show(r.Context(), id)
		if err != nil {
			return err
		}
		return p.JSON(v)
	})
}

// listQuery is a listing request: parent, scope, --state/--mode, a page.
type listQuery struct {
	parent string
	scope  corpus.Scope
	filter report.Filter
	page   pageParams
}

func parseList(r *http.Request, def int) (listQuery, error) {
	q := r.URL.Query()
	var lq listQuery
	var err error
	if lq.parent, err = sessionID(r, ""); err != nil {
		return lq, err
	}
	if lq.scope, err = parseScope(q); err != nil {
		return lq, err
	}
	lq.filter = report.Filter{States: splitValues(q["state"]), Modes: splitValues(q["mode"])}
	if err := lq.filter.Check("state", "mode"); err != nil {
		return lq, &dsherr.Error{Code: dsherr.Usage, Msg: err.Error(), Err: err}
	}
	lq.page, err = parsePage(q, def)
	return lq, err
}

// parseScope reads ?scope= (default children) as the CLI reads --scope.
func parseScope(q url.Values) (corpus.Scope, error) {
	return parseScopeOr(q, corpus.ScopeChildren)
}

// parseScopeOr reads ?scope=, def when the query does not say.
func parseScopeOr(q url.Values, def corpus.Scope) (corpus.Scope, error) {
	if !q.Has("scope") {
		return def, nil
	}
	s, err := corpus.ParseScope(q.Get("scope"))
	if err != nil {
		return 0, dsherr.Wrap(dsherr.Usage, err, "scope")
	}
	return s, nil
}

// splitValues reads repeated and comma-separated values, as the CLI's
// --state and --mode do.
func splitValues(vs []string) []string {
	var out []string
	for _, v := range vs {
		for _, part := range strings.Split(v, ",") {
			if part != "" {
				out = append(out, part)
			}
		}
	}
	return out
}

// list reads lq's whole listing, filtered, as `dsh list` does.
func (s *Server) list(ctx context.Context, lq listQuery) (report.Listing, error) {
	listing, err := s.listScope(ctx, lq.parent, lq.scope)
	if err != nil {
		return listing, err
	}
	listing.Rows = lq.filter.Apply(listing.Rows)
	return listing, nil
}

// listScope reads parent's whole listing in scope, unfiltered.
func (s *Server) listScope(ctx context.Context, parent string, scope corpus.Scope) (report.Listing, error) {
	l := s.corpus.Lister()
	l.Profile = s.cfg.Profile
	return report.List(ctx, l, parent, scope)
}

func (s *Server) apiChildren(w http.ResponseWriter, r *http.Request) {
	lq, err := parseList(r, defaultPage)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	listing, err := s.list(r.Context(), lq)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	rows, next, err := pageRows(listing.Rows, lq.page)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	setNext(w, r, next)
	s.answer(w, r, func(p *render.Printer) error { return p.Listing(rows, lq.scope) })
}

// diagnoseQuery is an audit request: ?parent=ID&scope=…, ?id=… (repeat),
// ?all=1, or none (the default audit).
func parseDiagnose(r *http.Request) (diagnose.Selection, int, error) {
	q := r.URL.Query()
	scope, err := parseScope(q)
	if err != nil {
		return diagnose.Selection{}, 0, err
	}
	sel := diagnose.Selection{Scope: scope, All: q.Get("all") == "1"}
	if q.Has("parent") {
		p, err := sessionID(r, "parent")
		if err != nil {
			return sel, 0, err
		}
		sel.Parent, sel.HasParent = p, true
	}
	for _, id := range q["id"] {
		if err := session.CheckID(id); err != nil {
			return sel, 0, dsherr.Wrap(dsherr.InvalidInput, err, "id")
		}
		sel.IDs = append(sel.IDs, id)
	}
	n := 0
	for _, set := range []bool{len(sel.IDs) > 0, sel.HasParent, sel.All} {
		if set {
			n++
		}
	}
	if n > 1 {
		return sel, 0, dsherr.New(dsherr.Usage, "choose one of parent, all or id")
	}
	maxFindings := 0
	if v := q.Get("max-findings"); v != "" {
		m, err := strconv.Atoi(v)
		if err != nil || m < 0 {
			return sel, 0, dsherr.New(dsherr.Usage, "max-findings %q: want a number >= 0", v)
		}
		maxFindings = m
	}
	return sel, maxFindings, nil
}

// audit runs diagnose over sel, as `dsh diagnose` does, handing each
// report to add.
func (s *Server) audit(ctx context.Context, sel diagnose.Selection, maxFindings int, add func(diagnose.Report) error) (diagnose.Summary, error) {
	return diagnose.Run(ctx, s.corpus.Reader, diagnose.Options{
		Profile:     s.cfg.Profile,
		Select:      sel,
		Strict:      true,
		MaxFindings: maxFindings,
	}, add)
}

func (s *Server) apiDiagnose(w http.ResponseWriter, r *http.Request) {
	sel, maxFindings, err := parseDiagnose(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.answer(w, r, func(p *render.Printer) error {
		out := p.Diagnosis()
		sum, err := s.audit(r.Context(), sel, maxFindings, out.Add)
		if err != nil {
			return err
		}
		return out.Close(sum)
	})
}

// apiLeases is `lease ls` (?parent=ID: the leases of its children).
func (s *Server) apiLeases(w http.ResponseWriter, r *http.Request) {
	var parent *string
	if r.URL.Query().Has("parent") {
		p, err := sessionID(r, "parent")
		if err != nil {
			s.fail(w, r, err)
			return
		}
		parent = &p
	}
	s.answer(w, r, func(p *render.Printer) error {
		t, err := leases.Read(r.Context(), s.corpus.Reader, parent)
		if err != nil {
			return err
		}
		return p.Leases(t.Rows)
	})
}
