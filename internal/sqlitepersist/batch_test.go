package sqlitepersist

import (
	"context"
	"reflect"
	"testing"
)

// InspectVerifiedTypes returns, for every verified untorn log, exactly what
// InspectTypes returns (a log without events of those types included), and
// leaves out logs changed outside dsh, torn logs and unknown ids.
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
	if err := st.CreateSession(ctx, rootHeader("plain"), newLog().add("turn/start", `{"turn":1}`).events); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Querier().ExecContext(ctx, `UPDATE events SET time = time + 1 WHERE session_id = 'changed' AND seq = 1`); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Querier().ExecContext(ctx, `UPDATE events SET data = '{"trunc' WHERE session_id = 'torn' AND seq = 2`); err != nil {
		t.Fatal(err)
	}
	for _, types := range [][]string{{"subagent/descriptor"}, {"subagent/descriptor", "turn/start"}} {
		got, err := st.InspectVerifiedTypes(ctx, []string{"a", "b", "changed", "torn", "plain", "missing"}, types)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 3 || got["a"] == nil || got["b"] == nil || got["plain"] == nil {
			t.Fatalf("%v: batch served %v, want exactly a, b and plain", types, keys(got))
		}
		for _, id := range []string{"a", "b", "plain"} {
			one, err := st.InspectTypes(ctx, id, types...)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got[id].Header, one.Header) || !reflect.DeepEqual(got[id].Events, one.Events) {
				t.Errorf("%v: %s: batch %+v, one at a time %+v", types, id, got[id], one)
			}
		}
		if n := len(got["a"].Events); n != len(types)+1 {
			t.Errorf("%v: a: %d events, want %d", types, n, len(types)+1)
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
