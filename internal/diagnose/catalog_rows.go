package diagnose

import (
	"context"

	"github.com/dsh-project/dsh/internal/corpus"
	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/subagent"
)

// Under --dsh-compat 0.1.7 a report's row is the one DSH 0.1.7's listing
// gives the session (subagent.Lister.ListCatalog, what `dsh list` prints
// under that profile): the row of `dsh list --parent <its parent>`, or in
// descendants scope of the walk from the audited parent. A session that
// listing has no row for is notListed, whatever its header says; the
// catalog cross-check's findings say why.

// listedRows are one 0.1.7 listing's rows by id (the first row of an id).
type listedRows struct {
	root  string
	scope corpus.Scope
	rows  map[string]subagent.Row
}

// catalogListed returns the rows of the 0.1.7 listing of root, held for
// the next chunk of the same group. A root DSH 0.1.7 cannot read lists no
// row (`dsh list` fails on it: NOT_FOUND or INVALID_LOG).
func (a *auditor) catalogListed(ctx context.Context, root string, scope corpus.Scope) (map[string]subagent.Row, error) {
	if l := a.listed; l != nil && l.root == root && l.scope == scope {
		return l.rows, nil
	}
	listing, err := a.lister.ListCatalog(ctx, root, scope)
	rows := map[string]subagent.Row{}
	switch code := dsherr.CodeOf(err); {
	case err == nil:
		for _, r := range listing.Rows {
			if scope == corpus.ScopeChildren {
				// Children scope prints neither parentId nor depth.
				r.ParentID, r.Depth = "", 0
			}
			if _, dup := rows[r.ID]; !dup {
				rows[r.ID] = r
			}
		}
	case code == dsherr.NotFound || code == dsherr.InvalidLog:
	default:
		return nil, err
	}
	a.listed = &listedRows{root: root, scope: scope, rows: rows}
	return rows, nil
}

// catalogResolution is the 0.1.7 listing's row for id under root as a
// resolution (nil when the listing has no row for it).
func (a *auditor) catalogResolution(ctx context.Context, root, id string, scope corpus.Scope) (*subagent.Resolution, error) {
	rows, err := a.catalogListed(ctx, root, scope)
	if err != nil {
		return nil, err
	}
	row, ok := rows[id]
	if !ok {
		return nil, nil
	}
	return &subagent.Resolution{Row: &row, Rung: subagent.RungRead}, nil
}
