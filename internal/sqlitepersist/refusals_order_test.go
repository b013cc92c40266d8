package sqlitepersist

import (
	"context"
	"reflect"
	"testing"

	"github.com/dsh-project/dsh/internal/backend"
)

// Refusals come by location, then id, whatever order they were recorded
// in: one file can hold several refused sessions.
func TestRefusalsByLocationThenID(t *testing.T) {
	ctx := context.Background()
	s, _ := openStore(t)
	for _, r := range []backend.Refusal{
		{Location: "/src/b.jsonl", ID: "b2", Code: backend.RefusedFormat, Reason: "r"},
		{Location: "/src/a.db", ID: "z", Code: backend.RefusedFormat, Reason: "r"},
		{Location: "/src/b.jsonl", ID: "b1", Code: backend.RefusedFormat, Reason: "r"},
		{Location: "/src/b.jsonl", ID: "", Code: backend.RefusedFormat, Reason: "r"},
		{Location: "/src/a.db", ID: "a", Code: backend.RefusedFormat, Reason: "r"},
	} {
		if err := s.RecordRefusal(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	var got [][2]string
	if err := s.Refusals(ctx, func(r backend.Refusal) error { got = append(got, [2]string{r.Location, r.ID}); return nil }); err != nil {
		t.Fatal(err)
	}
	want := [][2]string{{"/src/a.db", "a"}, {"/src/a.db", "z"}, {"/src/b.jsonl", ""}, {"/src/b.jsonl", "b1"}, {"/src/b.jsonl", "b2"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Refusals = %q\nwant %q", got, want)
	}
}
