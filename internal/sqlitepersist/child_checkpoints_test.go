package sqlitepersist

import (
	"context"
	"reflect"
	"slices"
	"testing"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/session"
)

// ChildCheckpoints is one parent's children's records only: not another
// parent's children's, not a root's, not the parent's own; EachCheckpoint
// is every record by session id.
func TestChildCheckpointsAreTheParentsOnly(t *testing.T) {
	ctx := context.Background()
	s, _ := openStore(t)
	headers := []session.Header{
		rootHeader("p"), rootHeader("q"), rootHeader("r"),
		childHeader("c2", "p", 2, true), childHeader("c1", "p", 1, false),
		childHeader("c3", "q", 3, true), childHeader("g", "c1", 4, true),
	}
	for _, h := range headers {
		if err := s.CreateSession(ctx, h, nil); err != nil {
			t.Fatal(err)
		}
		if err := s.PutCheckpoint(ctx, backend.CheckpointRecord{Witness: h, AsOfSeq: -1, Rows: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	ids := func(each func(fn func(backend.CheckpointRecord) error) error) []string {
		t.Helper()
		out := []string{}
		if err := each(func(r backend.CheckpointRecord) error { out = append(out, r.Witness.ID); return nil }); err != nil {
			t.Fatal(err)
		}
		return out
	}
	for parent, want := range map[string][]string{"p": {"c1", "c2"}, "q": {"c3"}, "c1": {"g"}, "r": {}, "nobody": {}} {
		got := ids(func(fn func(backend.CheckpointRecord) error) error { return s.ChildCheckpoints(ctx, parent, fn) })
		slices.Sort(got) // in no particular order
		if !reflect.DeepEqual(got, want) {
			t.Errorf("ChildCheckpoints(%s) = %q, want %q", parent, got, want)
		}
	}
	if got, want := ids(func(fn func(backend.CheckpointRecord) error) error { return s.EachCheckpoint(ctx, fn) }),
		[]string{"c1", "c2", "c3", "g", "p", "q", "r"}; !reflect.DeepEqual(got, want) {
		t.Errorf("EachCheckpoint = %q, want %q (by session id)", got, want)
	}
}
