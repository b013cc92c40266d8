package storetest

import (
	"errors"
	"reflect"
	"testing"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/session"
)

// testHeadersOfEqualsHeader: HeadersOf gives, for a batch of ids, what
// Header gives for each: the stored header of a held id (absent fields
// absent), nothing for an unknown or unstorable one.
func testHeadersOfEqualsHeader(t *testing.T, e *env) {
	r, ok := e.b.(backend.HeaderBatchReader)
	if !ok {
		t.Skip("no HeaderBatchReader")
	}
	seeded := child("c", "p", 2)
	seeded.SeedLength, seeded.AgentPreset = ptr(int64(0)), ptr("reviewer")
	e.create(root("p", 1), turn(0, 1))
	e.create(seeded, nil)
	ids := []string{"p", "c", "unknown", "bad\x00id", ""}
	got, err := r.HeadersOf(e.ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]session.Header{}
	for _, id := range ids {
		h, err := e.b.Header(e.ctx, id)
		switch {
		case err == nil:
			want[id] = h
		case !errors.Is(err, backend.ErrNotFound):
			t.Fatalf("Header(%q): %v", id, err)
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("HeadersOf = %+v, want Header's %+v", got, want)
	}
}

// testUpdatePipelined: a pipelined transaction stores what Update stores,
// nested writes included; a refusal inside a nested write (before it
// wrote) is undone alone; and a write that fails once sent (a duplicate
// id) fails the whole transaction, keeping nothing of it, even where a
// nested write that failed is ignored by its caller.
func testUpdatePipelined(t *testing.T, e *env) {
	p, ok := e.b.(backend.PipelinedUpdater)
	if !ok {
		t.Skip("no PipelinedUpdater")
	}
	e.create(root("held", 1), turn(0, 1))
	refused := errors.New("refused before writing")
	err := p.UpdatePipelined(e.ctx, func(tx backend.Store) error {
		if _, err := tx.ImportSession(e.ctx, root("a", 2), turn(0, 1), nil); err != nil {
			return err
		}
		if err := tx.Update(e.ctx, func(sp backend.Store) error {
			_, err := sp.ImportSession(e.ctx, root("b", 3), turn(0, 1), nil)
			return err
		}); err != nil {
			return err
		}
		if err := tx.Update(e.ctx, func(backend.Store) error { return refused }); !errors.Is(err, refused) {
			t.Errorf("a nested write's own error: %v", err)
		}
		return tx.SetSourceFormat(e.ctx, "a", "jsonl")
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b"} {
		a, err := e.b.Audit(e.ctx, id)
		if err != nil || a.ReadErr != nil || len(a.Events) != len(turn(0, 1)) {
			t.Errorf("%s after a pipelined import: %+v, %v", id, a, err)
		}
	}
	if f, err := e.b.(backend.SourceFormatReader).SourceFormat(e.ctx, "a"); err != nil || f != "jsonl" {
		t.Errorf("source format of a: %q, %v", f, err)
	}

	err = p.UpdatePipelined(e.ctx, func(tx backend.Store) error {
		if _, err := tx.ImportSession(e.ctx, root("c", 4), turn(0, 1), nil); err != nil {
			return err
		}
		// The first nested write stores e and, held back, the held id
		// again; the second finds out (a read sends what is held back)
		// and fails. Its caller goes on, as a caller tolerating a failed
		// nested write does: the transaction must fail all the same, not
		// roll back to a savepoint and lose e.
		if err := tx.Update(e.ctx, func(sp backend.Store) error {
			if _, err := sp.ImportSession(e.ctx, root("e", 6), turn(0, 1), nil); err != nil {
				return err
			}
			_, err := sp.ImportSession(e.ctx, root("held", 1), turn(0, 1), nil)
			return err
		}); err != nil && !errors.Is(err, backend.ErrDuplicate) {
			return err
		}
		tx.Update(e.ctx, func(sp backend.Store) error {
			_, err := sp.Header(e.ctx, "c")
			return err
		})
		_, err := tx.ImportSession(e.ctx, root("d", 5), turn(0, 1), nil)
		return err
	})
	if !errors.Is(err, backend.ErrDuplicate) {
		t.Errorf("a pipelined transaction storing a held id: %v, want ErrDuplicate", err)
	}
	for _, id := range []string{"c", "d", "e"} {
		if _, err := e.b.Header(e.ctx, id); !errors.Is(err, backend.ErrNotFound) {
			t.Errorf("%s after the failed transaction: %v, want not found", id, err)
		}
	}
}
