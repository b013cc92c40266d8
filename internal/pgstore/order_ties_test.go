package pgstore

import (
	"context"
	"reflect"
	"testing"

	"github.com/dsh-project/dsh/internal/pgtest"
	"github.com/dsh-project/dsh/internal/session"
)

// ChildrenOf and RootHeaders order by createdAt, then id, whatever order
// the sessions were written in (PostgreSQL gives no order a query does
// not ask for).
func TestHeaderOrderBreaksTiesByID(t *testing.T) {
	ctx := context.Background()
	s := openT(t, pgtest.NewDatabase(t))
	p := "p"
	// Written in descending id order, ties on createdAt.
	for _, h := range []session.Header{
		{ID: "r9", CreatedAt: 5}, {ID: "r5", CreatedAt: 5}, {ID: "r1", CreatedAt: 5}, {ID: "r0", CreatedAt: 7}, {ID: "p", CreatedAt: 1},
		{ID: "c9", CreatedAt: 3, ParentSession: &p}, {ID: "c5", CreatedAt: 3, ParentSession: &p}, {ID: "c1", CreatedAt: 3, ParentSession: &p}, {ID: "c0", CreatedAt: 4, ParentSession: &p},
	} {
		if err := s.CreateSession(ctx, h, nil); err != nil {
			t.Fatal(err)
		}
	}
	ids := func(each func(fn func(session.Header) error) error) []string {
		t.Helper()
		var out []string
		if err := each(func(h session.Header) error { out = append(out, h.ID); return nil }); err != nil {
			t.Fatal(err)
		}
		return out
	}
	if got, want := ids(func(fn func(session.Header) error) error { return s.ChildrenOf(ctx, "p", fn) }), []string{"c1", "c5", "c9", "c0"}; !reflect.DeepEqual(got, want) {
		t.Errorf("ChildrenOf = %q, want %q", got, want)
	}
	if got, want := ids(func(fn func(session.Header) error) error { return s.RootHeaders(ctx, false, fn) }), []string{"p", "r1", "r5", "r9", "r0"}; !reflect.DeepEqual(got, want) {
		t.Errorf("RootHeaders = %q, want %q", got, want)
	}
}
