package serve

import (
	"context"
	"fmt"
	"net/http"

	"github.com/dsh-project/dsh/internal/corpus"
	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/location"
	"github.com/dsh-project/dsh/internal/logdamage"
	"github.com/dsh-project/dsh/internal/render"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/subagent"
	"github.com/dsh-project/dsh/internal/usage"
)

// usageQuery is a usage request: ?id=… (repeated) or ?parent=ID with
// ?scope= (default descendants, as dsh usage's --scope), ?by=model, a page.
type usageQuery struct {
	ids     []string
	parent  string
	subtree bool
	scope   corpus.Scope
	page    pageParams
}

func parseUsage(r *http.Request) (usageQuery, error) {
	q := r.URL.Query()
	var uq usageQuery
	var err error
	uq.subtree = q.Has("parent")
	switch {
	case uq.subtree && q.Has("id"):
		return uq, dsherr.New(dsherr.Usage, "give id or parent, not both")
	case !uq.subtree && !q.Has("id"):
		return uq, dsherr.New(dsherr.Usage, "give one or more id, or parent")
	case !uq.subtree && q.Has("scope"):
		return uq, dsherr.New(dsherr.Usage, "scope needs parent")
	}
	if uq.scope, err = parseScopeOr(q, corpus.ScopeDescendants); err != nil {
		return uq, err
	}
	// by=model shapes the CLI's table and tree; its JSON always has the
	// models, so here it is only checked.
	if by := q.Get("by"); q.Has("by") && by != "model" {
		return uq, dsherr.New(dsherr.Usage, "by: %q is not model", by)
	}
	if uq.subtree {
		if uq.parent, err = sessionID(r, "parent"); err != nil {
			return uq, err
		}
	}
	for _, id := range q["id"] {
		if err := session.CheckID(id); err != nil {
			return uq, dsherr.Wrap(dsherr.InvalidInput, err, "id")
		}
		uq.ids = append(uq.ids, id)
	}
	uq.page, err = parsePage(q, defaultPage)
	return uq, err
}

// usage reads uq's records as `dsh usage` does: of the ids, or of the
// parent's subtree as its descendants listing shows it.
func (s *Server) usage(ctx context.Context, uq usageQuery) ([]usage.Record, error) {
	ids := uq.ids
	if uq.subtree {
		ids = []string{uq.parent}
	}
	for _, id := range ids {
		if _, err := s.corpus.Reader.Header(ctx, id); err != nil {
			return nil, s.corpus.LookupError(id, err)
		}
	}
	var records []usage.Record
	var err error
	if !uq.subtree {
		err = s.corpus.View(ctx, func(view location.Reader) error {
			records, err = usage.Records(ctx, view, ids)
			return err
		})
		return records, err
	}
	listing, err := s.listScope(ctx, uq.parent, corpus.ScopeDescendants)
	if err != nil {
		return nil, err
	}
	err = s.corpus.View(ctx, func(view location.Reader) error {
		records, err = usage.SubtreeRecords(ctx, listing.Rows, view, uq.parent, uq.scope == corpus.ScopeChildren)
		return err
	})
	return records, err
}

// answerUsage serves one page of uq's records.
func (s *Server) answerUsage(w http.ResponseWriter, r *http.Request, uq usageQuery) {
	records, err := s.usage(r.Context(), uq)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	page, next, err := pageOf(records, func(r usage.Record) string { return r.ID }, uq.page)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	setNext(w, r, next)
	s.answer(w, r, func(p *render.Printer) error {
		return p.Usage(page, render.UsageView{Subtree: uq.subtree})
	})
}

// apiUsage is `dsh usage ID… -o json` (?id= repeated) or `dsh usage
// --parent ID [--scope] -o json` (?parent=&scope=), paged.
func (s *Server) apiUsage(w http.ResponseWriter, r *http.Request) {
	uq, err := parseUsage(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.answerUsage(w, r, uq)
}

// apiSessionUsage is `dsh usage ID -o json`: the session's own usage.
func (s *Server) apiSessionUsage(w http.ResponseWriter, r *http.Request) {
	id, err := sessionID(r, "")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	page, err := parsePage(r.URL.Query(), defaultPage)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.answerUsage(w, r, usageQuery{ids: []string{id}, page: page})
}

// usageTree is parent's subtree usage for a page, as `dsh usage --parent`
// counts it: descendants is parent's descendants listing when the page
// read it already, nil to read it here.
func (s *Server) usageTree(ctx context.Context, parent string, descendants []subagent.Row, read bool) (*usage.Tree, error) {
	if read {
		listing, err := s.listScope(ctx, parent, corpus.ScopeDescendants)
		if err != nil {
			return nil, err
		}
		descendants = listing.Rows
	}
	var t *usage.Tree
	err := s.corpus.View(ctx, func(view location.Reader) error {
		var err error
		t, err = usage.Walk(ctx, descendants, view, parent)
		return err
	})
	return t, err
}

// tokens is a session's usage as a page shows it.
type tokens struct {
	Own, Subtree usage.Totals
	// Note says why the own totals are not a whole log's ("" when they
	// are).
	Note string
}

func tokensOf(n usage.Node) *tokens {
	return &tokens{Own: n.Total, Subtree: n.Subtree, Note: damageNote(n.Damage, n.FromSeq, "counted")}
}

// damageNote says how much of a log read in part a page's figures cover
// ("" for a whole log): verb is what was done with what could be read.
func damageNote(k logdamage.Kind, from int64, verb string) string {
	switch k {
	case logdamage.Torn:
		return fmt.Sprintf("torn from seq %d, prefix %s", from, verb)
	case logdamage.Damaged:
		return fmt.Sprintf("damaged from seq %d, prefix %s", from, verb)
	case logdamage.Unreadable:
		return "log unreadable, nothing " + verb
	case logdamage.Missing:
		return "missing, nothing " + verb
	}
	return ""
}
