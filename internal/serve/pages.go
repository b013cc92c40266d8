package serve

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/dsh-project/dsh/internal/corpus"
	"github.com/dsh-project/dsh/internal/diagnose"
	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/leases"
	"github.com/dsh-project/dsh/internal/render"
	"github.com/dsh-project/dsh/internal/report"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/subagent"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed assets/app.js assets/style.css
var assetFS embed.FS

// Page sizes of the HTML pages: a tree page draws at most maxPageRows rows.
const (
	defaultPageRows = 500
	maxPageRows     = 2000
	// lastEvents is how many of a session's events its page shows.
	lastEvents = 10
	// pageFindings is how many findings the audit page lists.
	pageFindings = 1000
	// eventData is how much of an event's data a page shows.
	eventData = 240
)

// pages are the parsed templates, one set per page.
type pages struct {
	roots, session, diagnose, search, errPage *template.Template
}

var funcs = template.FuncMap{
	// vis makes control and bidirectional formatting characters visible
	// (\u202e and so on) before html/template escapes the text: a label
	// must not reorder what the eye sees.
	"vis":         render.Escape,
	"ms":          render.Millis,
	"sessionHref": sessionHref,
	"deref":       func(p *string) string { return *p },
	"deref64":     func(p *int64) int64 { return *p },
	"has":         slices.Contains[[]string],
}

func newPages() (*pages, error) {
	base, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html")
	if err != nil {
		return nil, fmt.Errorf("parse templates: %w", err)
	}
	page := func(name string) (*template.Template, error) {
		t, err := base.Clone()
		if err != nil {
			return nil, err
		}
		return t.ParseFS(templateFS, "templates/"+name)
	}
	p := &pages{errPage: base}
	for _, x := range []struct {
		t    **template.Template
		name string
	}{{&p.roots, "roots.html"}, {&p.session, "session.html"}, {&p.diagnose, "diagnose.html"}, {&p.search, "search.html"}} {
		if *x.t, err = page(x.name); err != nil {
			return nil, fmt.Errorf("parse templates: %w", err)
		}
	}
	return p, nil
}

// sessionHref is a session page's address; the id is one path segment
// whatever it holds ("." and "..", which a path would resolve, escaped
// too).
func sessionHref(id string) string {
	seg := url.PathEscape(id)
	if id == "." || id == ".." {
		seg = strings.ReplaceAll(id, ".", "%2E")
	}
	return "/sessions/" + seg
}

func (p *pages) fail(w http.ResponseWriter, status int, code dsherr.Code, msg string) {
	var buf bytes.Buffer
	_ = p.errPage.ExecuteTemplate(&buf, "error", map[string]any{"Status": fmt.Sprintf("%d %s", status, http.StatusText(status)), "Code": code, "Message": msg})
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// errorFragment is what a live fragment shows when it cannot be read.
func errorFragment(err error) []byte {
	var buf bytes.Buffer
	buf.WriteString(`<p class="error">`)
	template.HTMLEscape(&buf, []byte(render.Escape(err.Error())))
	buf.WriteString(`</p>`)
	return buf.Bytes()
}

func (s *Server) asset(name, ctype string) http.HandlerFunc {
	b, err := assetFS.ReadFile("assets/" + name)
	if err != nil {
		panic(err) // embedded at build time: cannot be missing
	}
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", ctype)
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		_, _ = w.Write(b)
	}
}

// execute renders a whole page.
func (s *Server) execute(w http.ResponseWriter, r *http.Request, t *template.Template, data any) {
	s.executeStatus(w, r, http.StatusOK, t, data)
}

// executeStatus renders a whole page with an HTTP status.
func (s *Server) executeStatus(w http.ResponseWriter, r *http.Request, status int, t *template.Template, data any) {
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout", data); err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// fragment renders one live fragment of a page.
func fragment(t *template.Template, name string, data any) ([]byte, error) {
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, name, data); err != nil {
		return nil, fmt.Errorf("render %s: %w", name, err)
	}
	return buf.Bytes(), nil
}

// pageBase is what every page shows.
type pageBase struct {
	Title string
	Where string
}

// rootsData is the root sessions fragment.
type rootsData struct {
	Sessions []report.Header
	Filter   string
	Next     string
}

func (s *Server) rootsFragment(ctx context.Context, rq rootsQuery) ([]byte, error) {
	hs, next, err := s.roots(ctx, rq)
	if err != nil {
		return nil, err
	}
	d := rootsData{Sessions: hs, Filter: rq.filter}
	if next != "" {
		q := url.Values{"cursor": {next}}
		if rq.filter != "" {
			q.Set("q", rq.filter)
		}
		if rq.page.limit != defaultPageRows {
			q.Set("limit", strconv.Itoa(rq.page.limit))
		}
		d.Next = "/?" + q.Encode()
	}
	return fragment(s.pages.roots, "roots", d)
}

func (s *Server) pageRoots(w http.ResponseWriter, r *http.Request) {
	rq, err := parseRoots(r.URL.Query(), defaultPageRows)
	if err == nil && rq.page.limit > maxPageRows {
		err = dsherr.New(dsherr.Usage, "limit %d: a page shows at most %d", rq.page.limit, maxPageRows)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	frag, err := s.rootsFragment(r.Context(), rq)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.execute(w, r, s.pages.roots, struct {
		pageBase
		Filter   string
		Events   string
		Fragment template.HTML
	}{pageBase{"Root sessions", s.cfg.Where}, rq.filter, "/api/v1/events?" + withView(r.URL.Query(), "roots", ""), template.HTML(frag)})
}

// withView is a page's query as its event stream's.
func withView(q url.Values, view, id string) string {
	// Set replaces a key's slice, so a shallow copy leaves q as it was.
	q = maps.Clone(q)
	q.Set("view", view)
	if id != "" {
		q.Set("id", id)
	}
	return q.Encode()
}

// node is one row of a tree page.
type node struct {
	ID, ParentID string
	Depth        int
	State        string
	Diag         bool
	Mode         subagent.Mode
	Label        *string
	HasChildren  bool
	// Children counts the rows directly below it in this listing.
	Children int
	// Holder is the live lease of a running child.
	Holder *leases.Row
	// Tokens is the row's own and subtree usage.
	Tokens *tokens
	Kids   []*node
}

// treeData is a tree fragment: one page of a listing, nested.
type treeData struct {
	Nodes       []*node
	Total       int
	Paged       bool
	First, Last int
	Next        string
	Empty       string
	// Tokens is the parent's own and subtree usage.
	Tokens *tokens
}

// treeFragment renders one page of lq's listing as a nested tree, with the
// lease holder of each running row.
func (s *Server) treeFragment(ctx context.Context, rd *round, lq listQuery) ([]byte, error) {
	listing, err := s.listScope(ctx, lq.parent, lq.scope)
	if err != nil {
		return nil, err
	}
	// The usage rollup walks the unfiltered descendants listing, as dsh
	// usage --parent does: the page's own when it shows descendants.
	ut, err := s.usageTree(ctx, lq.parent, listing.Rows, lq.scope != corpus.ScopeDescendants)
	if err != nil {
		return nil, err
	}
	listing.Rows = lq.filter.Apply(listing.Rows)
	rows, next, err := pageRows(listing.Rows, lq.page)
	if err != nil {
		return nil, err
	}
	holders, err := s.holders(ctx, rd, rows)
	if err != nil {
		return nil, err
	}
	below := map[string]int{}
	for _, r := range listing.Rows {
		below[r.ParentID]++
	}
	usageOf := make(map[string]*tokens, len(ut.Nodes))
	for _, n := range ut.Nodes {
		usageOf[n.ID] = tokensOf(n)
	}
	d := treeData{Total: len(listing.Rows), Empty: "No rows.", Tokens: usageOf[lq.parent]}
	if len(listing.Rows) == 0 && (len(lq.filter.States) > 0 || len(lq.filter.Modes) > 0) {
		d.Empty = "No row matches the filter."
	}
	if len(rows) > 0 && len(rows) < len(listing.Rows) {
		first := slices.IndexFunc(listing.Rows, func(r subagent.Row) bool { return r.ID == rows[0].ID })
		d.Paged, d.First, d.Last = true, first+1, first+len(rows)
	}
	byID := make(map[string]*node, len(rows))
	for _, r := range rows {
		n := &node{ID: r.ID, ParentID: r.ParentID, Depth: r.Depth, State: report.State(r), Diag: r.Kind == subagent.KindDiagnostic,
			Mode: r.Mode, Label: r.Label, HasChildren: r.HasChildren, Tokens: usageOf[r.ID]}
		if h, ok := holders[r.ID]; ok {
			n.Holder = &h
		}
		if lq.scope == corpus.ScopeDescendants {
			n.Children = below[r.ID]
		}
		if up, ok := byID[r.ParentID]; ok && lq.scope == corpus.ScopeDescendants {
			up.Kids = append(up.Kids, n)
		} else {
			d.Nodes = append(d.Nodes, n)
		}
		// A row listed twice (a loop of parent links) nests once.
		if _, seen := byID[r.ID]; !seen {
			byID[r.ID] = n
		}
	}
	if next != "" {
		q := url.Values{"cursor": {next}, "scope": {lq.scope.String()}}
		if len(lq.filter.States) > 0 {
			q.Set("state", strings.Join(lq.filter.States, ","))
		}
		if len(lq.filter.Modes) > 0 {
			q.Set("mode", strings.Join(lq.filter.Modes, ","))
		}
		if lq.page.limit != defaultPageRows {
			q.Set("limit", strconv.Itoa(lq.page.limit))
		}
		d.Next = sessionHref(lq.parent) + "?" + q.Encode()
	}
	return fragment(s.pages.session, "tree", d)
}

// holders are the live leases of the running rows, by session id, judged
// by the backend's clock.
func (s *Server) holders(ctx context.Context, rd *round, rows []subagent.Row) (map[string]leases.Row, error) {
	running := false
	for _, r := range rows {
		running = running || r.Kind == subagent.KindChild && r.Activity == subagent.ActivityRunning
	}
	if !running {
		return nil, nil
	}
	t, err := rd.leases(ctx)
	if err != nil {
		return nil, err
	}
	return t.Holders(), nil
}

// readLeases reads every lease, judged by the backend's clock.
func (s *Server) readLeases(ctx context.Context) (leases.Table, error) {
	return leases.Read(ctx, s.corpus.Reader, nil)
}

// newRound is what a page request reads once for everything it renders.
func (s *Server) newRound() *round { return &round{read: s.readLeases} }

// eventLine is one event as a session page shows it.
type eventLine struct {
	Seq  int64
	Type string
	Time int64
	Data string
}

// fieldLine is one header or log field; Href links a session it names.
type fieldLine struct {
	Name, Value, Href string
}

func (s *Server) pageSession(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if !q.Has("scope") {
		q.Set("scope", corpus.ScopeDescendants.String())
		r.URL.RawQuery = q.Encode()
	}
	lq, err := parseList(r, defaultPageRows)
	if err == nil && lq.page.limit > maxPageRows {
		err = dsherr.New(dsherr.Usage, "limit %d: a page shows at most %d", lq.page.limit, maxPageRows)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ctx := r.Context()
	data := struct {
		pageBase
		ID, ShowErr        string
		Fields             []fieldLine
		Findings           []diagnose.Finding
		Events             []eventLine
		Scope, State, Mode string
		Live               string
		Fragment           template.HTML
	}{pageBase: pageBase{Title: render.Escape(lq.parent), Where: s.cfg.Where}, ID: lq.parent, Scope: lq.scope.String(),
		State: strings.Join(lq.filter.States, ","), Mode: strings.Join(lq.filter.Modes, ",")}
	v, events, err := s.show(ctx, lq.parent)
	known := true
	switch {
	case report.ErrorCode(err) == dsherr.NotFound:
		// A parent without a session is still known by its children (a
		// source holding only them), as dsh list knows it.
		listing, lerr := s.list(ctx, lq)
		if lerr != nil || len(listing.Rows) == 0 {
			s.fail(w, r, err)
			return
		}
		known = false
		data.ShowErr = err.Error()
	case err != nil:
		data.ShowErr = err.Error()
	default:
		for _, f := range v.Fields() {
			fl := fieldLine{Name: f.Name, Value: f.Value}
			if f.Name == "parentSession" && v.Header.ParentSession != nil {
				fl.Href = sessionHref(*v.Header.ParentSession)
			}
			data.Fields = append(data.Fields, fl)
		}
	}
	if _, err := s.audit(ctx, diagnose.Selection{IDs: []string{lq.parent}}, 0, func(rep diagnose.Report) error {
		data.Findings = append(data.Findings, rep.Findings...)
		return nil
	}); err != nil && known {
		s.fail(w, r, err)
		return
	}
	data.Events = lastEventLines(events)
	frag, err := s.treeFragment(ctx, s.newRound(), lq)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	data.Fragment = template.HTML(frag)
	data.Live = "/api/v1/events?" + withView(r.URL.Query(), "tree", lq.parent)
	s.execute(w, r, s.pages.session, data)
}

// lastEventLines are the last few events, newest first, their data cut to
// what a line shows.
func lastEventLines(events []session.Event) []eventLine {
	var out []eventLine
	evs := events[max(0, len(events)-lastEvents):]
	for i := len(evs) - 1; i >= 0; i-- {
		e := evs[i]
		text := string(e.Data)
		if c, err := compactJSON(e.Data); err == nil {
			text = c
		}
		if len(text) > eventData {
			text = strings.ToValidUTF8(text[:eventData], "") + "…"
		}
		out = append(out, eventLine{Seq: e.Seq, Type: e.Type, Time: e.Time, Data: text})
	}
	return out
}

func compactJSON(b []byte) (string, error) {
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return "", err
	}
	return buf.String(), nil
}

// topic is the live fragment an event stream asks for, and its key: the
// same fragment for the same query, whoever asks.
func (p *pages) topic(s *Server, r *http.Request) (string, renderFunc, error) {
	q := r.URL.Query()
	switch q.Get("view") {
	case "roots":
		rq, err := parseRoots(q, defaultPageRows)
		if err != nil {
			return "", nil, err
		}
		key := "roots\x00" + rq.filter + "\x00" + rq.page.cursor + "\x00" + strconv.Itoa(rq.page.limit)
		return key, func(ctx context.Context, _ *round) ([]byte, error) { return s.rootsFragment(ctx, rq) }, nil
	case "tree":
		lr := r.Clone(r.Context())
		lr.SetPathValue("id", q.Get("id"))
		lq, err := parseList(lr, defaultPageRows)
		if err != nil {
			return "", nil, err
		}
		key := strings.Join([]string{"tree", lq.parent, lq.scope.String(), strings.Join(lq.filter.States, ","), strings.Join(lq.filter.Modes, ","), lq.page.cursor, strconv.Itoa(lq.page.limit)}, "\x00")
		return key, func(ctx context.Context, rd *round) ([]byte, error) { return s.treeFragment(ctx, rd, lq) }, nil
	}
	return "", nil, dsherr.New(dsherr.Usage, "view %q: want tree or roots", q.Get("view"))
}

// count is one line of the audit summary.
type count struct {
	Name  string
	Count int
}

func (s *Server) pageDiagnose(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("parent") == "" {
		// The form's empty parent box is the default audit.
		q.Del("parent")
		r.URL.RawQuery = q.Encode()
	}
	sel, _, err := parseDiagnose(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var findings []diagnose.Finding
	sum, err := s.audit(r.Context(), sel, pageFindings, func(rep diagnose.Report) error {
		findings = append(findings, rep.Findings...)
		return nil
	})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	data := struct {
		pageBase
		Parent, Scope           string
		Summary                 diagnose.Summary
		Severities, Codes, Rows []count
		Findings                []diagnose.Finding
		Truncated               bool
		Max                     int
	}{pageBase: pageBase{Title: "Catalog audit", Where: s.cfg.Where}, Parent: sel.Parent, Scope: sel.Scope.String(), Summary: sum,
		Findings: findings, Truncated: sum.Truncated, Max: pageFindings}
	for _, sev := range []diagnose.Severity{diagnose.Error, diagnose.Warning, diagnose.Info} {
		data.Severities = append(data.Severities, count{sev.String(), sum.BySeverity[sev]})
	}
	for code, n := range sum.ByCode {
		data.Codes = append(data.Codes, count{string(code), n})
	}
	for kind, n := range sum.Rows {
		data.Rows = append(data.Rows, count{string(kind), n})
	}
	byName := func(a, b count) int { return strings.Compare(a.Name, b.Name) }
	slices.SortFunc(data.Codes, byName)
	slices.SortFunc(data.Rows, byName)
	s.execute(w, r, s.pages.diagnose, data)
}
