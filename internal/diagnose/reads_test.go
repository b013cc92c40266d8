package diagnose

import (
	"context"
	"reflect"
	"sync"
	"testing"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/corpus"
	"github.com/dsh-project/dsh/internal/dshcompat"
	"github.com/dsh-project/dsh/internal/sqlitepersist"
)

// logCounter is a real store that counts, per session, the reads that
// return a whole log (Audit, AuditEach, Inspect); a view of it is itself.
type logCounter struct {
	*sqlitepersist.Store
	mu    sync.Mutex
	reads map[string]int
}

func (c *logCounter) count(ids ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		c.reads[id]++
	}
}

func (c *logCounter) View(ctx context.Context, fn func(backend.Store) error) error { return fn(c) }

func (c *logCounter) Audit(ctx context.Context, id string) (*backend.AuditRead, error) {
	c.count(id)
	return c.Store.Audit(ctx, id)
}

func (c *logCounter) AuditEach(ctx context.Context, ids []string, fn func(*backend.AuditRead) error) error {
	c.count(ids...)
	return c.Store.AuditEach(ctx, ids, fn)
}

func (c *logCounter) Inspect(ctx context.Context, id string) (*backend.Inspection, error) {
	c.count(id)
	return c.Store.Inspect(ctx, id)
}

// TestEachLogReadOnce: every audit reads the log of each session it
// examines once (the batch audit decodes and judges it there), whatever it
// selects and under every profile; the reports come out in the same order
// as from the store itself.
func TestEachLogReadOnce(t *testing.T) {
	s := newStore(t)
	damageCorpus(s)
	for _, profile := range dshcompat.All() {
		for name, sel := range map[string]Selection{
			"default":     {},
			"all":         {All: true},
			"children":    {Parent: "parent", HasParent: true, Scope: corpus.ScopeChildren},
			"descendants": {Parent: "parent", HasParent: true, Scope: corpus.ScopeDescendants},
		} {
			c := &logCounter{Store: s.st, reads: map[string]int{}}
			var order []string
			opts := Options{Strict: true, Profile: profile, Select: sel}
			if _, err := Run(s.ctx, c, opts, func(r Report) error { order = append(order, r.ID); return nil }); err != nil {
				t.Fatalf("%s %s: %v", profile, name, err)
			}
			var direct []string
			if _, err := Run(s.ctx, s.st, opts, func(r Report) error { direct = append(direct, r.ID); return nil }); err != nil {
				t.Fatal(err)
			}
			if len(order) == 0 || len(order) != len(direct) {
				t.Fatalf("%s %s: %d reports through the counter, %d from the store", profile, name, len(order), len(direct))
			}
			for i := range order {
				if order[i] != direct[i] {
					t.Fatalf("%s %s: report %d is %s, from the store %s", profile, name, i, order[i], direct[i])
				}
			}
			for _, id := range order {
				if _, err := s.st.Header(s.ctx, id); err != nil {
					continue // a cataloged child without a session: no log
				}
				if n := c.reads[id]; n != 1 {
					t.Errorf("%s %s: the log of %s was read %d times", profile, name, id, n)
				}
			}
			for id, n := range c.reads {
				if n > 1 {
					t.Errorf("%s %s: the log of %s was read %d times", profile, name, id, n)
				}
			}
		}
	}
}

// TestPagedAuditIsTheWholeAudit: auditing a parent's children a page at a
// time (childrenPage) changes no report, no order and no count, wherever
// the pages end — among tied createdAt too — under every profile, for the
// default audit and --parent.
func TestPagedAuditIsTheWholeAudit(t *testing.T) {
	s := newStore(t)
	damageCorpus(s)
	tie := s.tick()
	for _, id := range []string{"b", "B", "9", "_x", "a", "10"} {
		h := s.childOf("parent", "tied-"+id)
		h.CreatedAt = tie
		s.create(h, withDescriptor(continuable(id)))
	}
	defer func(n int) { childrenPage = n }(childrenPage)
	for _, profile := range dshcompat.All() {
		for name, sel := range map[string]Selection{
			"default":  {},
			"children": {Parent: "parent", HasParent: true, Scope: corpus.ScopeChildren},
		} {
			opts := Options{Strict: true, Profile: profile, Select: sel}
			childrenPage = 1 << 20
			whole, wholeSum, err := s.audit(opts)
			if err != nil {
				t.Fatal(err)
			}
			for _, size := range []int{1, 2, 3, 5} {
				childrenPage = size
				paged, sum, err := s.audit(opts)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(paged, whole) || !reflect.DeepEqual(sum, wholeSum) {
					t.Fatalf("%s %s, pages of %d: reports %q, want %q (summary %+v, want %+v)", profile, name, size, ids(paged), ids(whole), sum, wholeSum)
				}
			}
		}
	}
}
