package corpus

import (
	"strconv"
	"strings"

	"github.com/dsh-project/dsh/internal/dsherr"
)

// Scope is how far below a parent an enumeration goes: the parent's
// children (Children) or the whole tree below it (Descendants). Rows of a
// descendants enumeration carry their place in the tree (parentId, depth)
// in every output. The zero value is ScopeChildren, DSH's default. (An int,
// not a byte: vet then flags string(scope), which would not be its name.)
type Scope int

// The two scopes, named as DSH's list_agents `scope` argument (and
// `dsh list/diagnose/export --scope`).
const (
	ScopeChildren Scope = iota
	ScopeDescendants
)

var scopeNames = [...]string{ScopeChildren: "children", ScopeDescendants: "descendants"}

// String is the scope's wire name ("children", "descendants").
func (s Scope) String() string {
	if s.Valid() {
		return scopeNames[s]
	}
	return "Scope(" + strconv.Itoa(int(s)) + ")"
}

// Valid reports whether s is one of the scopes.
func (s Scope) Valid() bool { return s >= 0 && int(s) < len(scopeNames) }

// ScopeNames lists the wire names in their documented order (for help and
// completion); the caller owns the slice.
func ScopeNames() []string { return append([]string(nil), scopeNames[:]...) }

// ParseScope reads a scope's wire name; any other text is an INVALID_INPUT
// error naming the valid values.
func ParseScope(name string) (Scope, error) {
	for s, n := range scopeNames {
		if n == name {
			return Scope(s), nil
		}
	}
	return 0, dsherr.New(dsherr.InvalidInput, "%q is not %s", name, strings.Join(scopeNames[:], " or "))
}
