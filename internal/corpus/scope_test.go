package corpus

import (
	"strconv"
	"testing"

	"github.com/dsh-project/dsh/internal/dsherr"
)

// A scope's wire name reads back as the same scope, the zero value is
// DSH's default (children), and any other text is INVALID_INPUT naming the
// valid names.
func TestParseScope(t *testing.T) {
	if Scope(0) != ScopeChildren {
		t.Errorf("zero Scope is %v, want children", Scope(0))
	}
	names := ScopeNames()
	if len(names) != 2 || names[0] != "children" || names[1] != "descendants" {
		t.Fatalf("ScopeNames() = %q", names)
	}
	names[0] = "mutated"
	if ScopeNames()[0] != "children" {
		t.Error("ScopeNames returned the package's own array")
	}
	for _, s := range []Scope{ScopeChildren, ScopeDescendants} {
		got, err := ParseScope(s.String())
		if err != nil || got != s {
			t.Errorf("ParseScope(%q) = %v, %v; want %v", s.String(), got, err, s)
		}
		if !s.Valid() {
			t.Errorf("%v is not Valid", s)
		}
	}
	for _, bad := range []string{"", "all", "Children", "descendants "} {
		_, err := ParseScope(bad)
		if dsherr.CodeOf(err) != dsherr.InvalidInput {
			t.Errorf("ParseScope(%q) = %v, want INVALID_INPUT", bad, err)
			continue
		}
		if want := `"` + bad + `" is not children or descendants`; err.Error() != want {
			t.Errorf("ParseScope(%q): %q, want %q", bad, err.Error(), want)
		}
	}
	for _, s := range []Scope{-1, 2} {
		if s.Valid() || s.String() != "Scope("+strconv.Itoa(int(s))+")" {
			t.Errorf("%d: Valid %v, String %q", int(s), s.Valid(), s.String())
		}
	}
}
