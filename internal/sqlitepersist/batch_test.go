package sqlitepersist

import (
	"context"
	"reflect"
	"testing"
)

// InspectVerifiedTypes returns, for every verified untorn log, exactly what
// InspectTypes returns, and leaves out logs changed outside dsh, torn logs
// and unknown ids.
func TestInspectVerifiedTypesMatchesInspectTypes(t *testing.T) {
	ctx := context.Background()
	st, _ := openStore(t)
	descriptor := `{"version":2,"mode":"continuable","provider":"spawn","label":"x"}`
	for _, id := range []string{"a", "b", "changed", "torn"} {
		h := rootHeader(id)
		if err := st.CreateSession(ctx, h, newLog().add("subagent/descriptor", descriptor).add("turn/start", `{"turn":1}`).add("subagent/descriptor", descriptor).events); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.Querier().ExecContext(ctx, `UPDATE events SET time = time + 1 WHERE session_id = 'changed' AND seq = 1`); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Querier().ExecContext(ctx, `UPDATE events SET data = '{"trunc' WHERE session_id = 'torn' AND seq = 2`); err != nil {
		t.Fatal(err)
	}
	types := []string{"subagent/descriptor"}
	got, err := st.InspectVerifiedTypes(ctx, []string{"a", "b", "changed", "torn", "missing"}, types)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got["a"] == nil || got["b"] == nil {
		t.Fatalf("batch served %v, want exactly a and b", keys(got))
	}
	for _, id := range []string{"a", "b"} {
		one, err := st.InspectTypes(ctx, id, types...)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got[id].Header, one.Header) || !reflect.DeepEqual(got[id].Events, one.Events) {
			t.Errorf("%s: batch %+v, one at a time %+v", id, got[id], one)
		}
		if len(got[id].Events) != 2 {
			t.Errorf("%s: %d descriptor events, want 2", id, len(got[id].Events))
		}
	}
	if _, err := st.InspectVerifiedTypes(ctx, []string{"a"}, []string{"turn/end"}); err == nil {
		t.Error("a closer type was accepted")
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
