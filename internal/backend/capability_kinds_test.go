package backend_test

import (
	"reflect"
	"testing"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/dshformat"
	"github.com/dsh-project/dsh/internal/pgstore"
	"github.com/dsh-project/dsh/internal/sqlitepersist"
)

// Each capability's kind says what is true of the types: a required one is
// part of Backend (and an optional one is not, or it would be required);
// one only a foreign corpus has is on dshformat.Corpus and on neither
// store; any other is on at least one store.
func TestCapabilityKindsMatchTheTypes(t *testing.T) {
	backendType := reflect.TypeFor[backend.Backend]()
	stores := map[string]reflect.Type{
		"sqlitepersist": reflect.TypeFor[*sqlitepersist.Store](),
		"pgstore":       reflect.TypeFor[*pgstore.Store](),
	}
	corpus := reflect.TypeFor[*dshformat.Corpus]()
	for _, c := range backend.Capabilities {
		name := c.Type.Name()
		if got := backendType.Implements(c.Type); got != c.Required {
			t.Errorf("%s: Required %v, but Backend implementing it is %v", name, c.Required, got)
		}
		onStore := false
		for store, typ := range stores {
			has := typ.Implements(c.Type)
			onStore = onStore || has
			if c.ForeignOnly && has {
				t.Errorf("%s: ForeignOnly, but %s implements it", name, store)
			}
			if c.Required && !has {
				t.Errorf("%s: Required, but %s does not implement it", name, store)
			}
		}
		if !c.ForeignOnly && !onStore {
			t.Errorf("%s: a store capability no store implements", name)
		}
		if c.ForeignOnly && !corpus.Implements(c.Type) {
			t.Errorf("%s: ForeignOnly, but dshformat.Corpus does not implement it", name)
		}
		if c.ForeignOnly && c.Required {
			t.Errorf("%s: both ForeignOnly and Required", name)
		}
	}
}
