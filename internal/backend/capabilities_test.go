package backend_test

import (
	"go/ast"
	"go/types"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"

	"github.com/dsh-project/dsh/internal/backend"
)

const backendPath = "github.com/dsh-project/dsh/internal/backend"

// TestCapabilitiesAreTheAssertions type-checks the module (its non-test
// files) and reads every type assertion and type switch whose operand is a
// store or corpus value — an interface all of whose methods are methods of
// backend's interfaces. Each must assert to an interface of
// backend.Capabilities, never to a consumer's own interface or a concrete
// type, and every listed capability must be asserted somewhere: a
// capability nothing asserts is either part of Backend or dead.
func TestCapabilitiesAreTheAssertions(t *testing.T) {
	cfg := &packages.Config{
		Mode: packages.NeedName | packages.NeedTypes | packages.NeedTypesInfo | packages.NeedSyntax,
		Dir:  "../..",
	}
	pkgs, err := packages.Load(cfg, "./...")
	if err != nil {
		t.Fatal(err)
	}
	var bpkg *types.Package
	for _, p := range pkgs {
		// Listing each package's directory makes go test's cache key on
		// it, so a file added anywhere runs the test again.
		if len(p.Syntax) > 0 {
			if _, err := os.ReadDir(filepath.Dir(p.Fset.File(p.Syntax[0].Pos()).Name())); err != nil {
				t.Fatal(err)
			}
		}
		for _, e := range p.Errors {
			t.Fatalf("%s: %v", p.PkgPath, e)
		}
		if p.PkgPath == backendPath {
			bpkg = p.Types
		}
	}
	if bpkg == nil {
		t.Fatal("package backend not loaded")
	}
	contract := contractMethods(bpkg)
	listed := map[string]bool{}
	for _, c := range backend.Capabilities {
		if c.Type.PkgPath() != backendPath {
			t.Errorf("capability %v is not declared in backend", c.Type)
		}
		obj := bpkg.Scope().Lookup(c.Type.Name())
		if obj == nil || !types.IsInterface(obj.Type()) {
			t.Errorf("capability %s is not an interface of backend", c.Type.Name())
		}
		listed[c.Type.Name()] = true
	}

	asserted := map[string][]string{}
	for _, p := range pkgs {
		for _, f := range p.Syntax {
			ast.Inspect(f, func(n ast.Node) bool {
				var x, typ ast.Expr
				switch n := n.(type) {
				case *ast.TypeAssertExpr:
					if n.Type == nil {
						return true // the x.(type) of a switch, read below
					}
					x, typ = n.X, n.Type
				case *ast.TypeSwitchStmt:
					var assert *ast.TypeAssertExpr
					switch s := n.Assign.(type) {
					case *ast.AssignStmt:
						assert = s.Rhs[0].(*ast.TypeAssertExpr)
					case *ast.ExprStmt:
						assert = s.X.(*ast.TypeAssertExpr)
					}
					if !storeValue(p.TypesInfo.TypeOf(assert.X), contract) {
						return true
					}
					for _, cl := range n.Body.List {
						for _, e := range cl.(*ast.CaseClause).List {
							check(t, p, e, asserted)
						}
					}
					return true
				default:
					return true
				}
				if storeValue(p.TypesInfo.TypeOf(x), contract) {
					check(t, p, typ, asserted)
				}
				return true
			})
		}
	}

	var missing, unlisted []string
	for name := range listed {
		if asserted[name] == nil {
			missing = append(missing, name)
		}
	}
	for name, at := range asserted {
		if !listed[name] {
			unlisted = append(unlisted, name+" ("+strings.Join(at, ", ")+")")
		}
	}
	sort.Strings(missing)
	sort.Strings(unlisted)
	if len(missing) > 0 {
		t.Errorf("backend.Capabilities lists what nothing asserts: %s", strings.Join(missing, ", "))
	}
	if len(unlisted) > 0 {
		t.Errorf("store values are asserted to backend interfaces backend.Capabilities does not list: %s", strings.Join(unlisted, "; "))
	}
}

// check records the assertion of a store value to typ, failing unless typ
// is an interface declared in backend.
func check(t *testing.T, p *packages.Package, typ ast.Expr, asserted map[string][]string) {
	t.Helper()
	at := p.Fset.Position(typ.Pos()).String()
	tv := p.TypesInfo.Types[typ]
	if tv.IsNil() {
		return
	}
	named, ok := tv.Type.(*types.Named)
	if !ok || !types.IsInterface(named) || named.Obj().Pkg() == nil || named.Obj().Pkg().Path() != backendPath {
		t.Errorf("%s: a store value is asserted to %s, not to a backend capability", at, tv.Type)
		return
	}
	name := named.Obj().Name()
	if i := strings.Index(at, "/dsh/"); i >= 0 {
		at = at[i+len("/dsh/"):]
	}
	asserted[name] = append(asserted[name], at)
}

// contractMethods is every method of an interface declared in backend.
func contractMethods(bpkg *types.Package) []*types.Func {
	var out []*types.Func
	for _, name := range bpkg.Scope().Names() {
		obj, ok := bpkg.Scope().Lookup(name).(*types.TypeName)
		if !ok {
			continue
		}
		iface, ok := obj.Type().Underlying().(*types.Interface)
		if !ok {
			continue
		}
		for m := range iface.Methods() {
			out = append(out, m)
		}
	}
	return out
}

// storeValue reports whether t is an interface made only of the contract's
// methods: a store or corpus as some consumer names it.
func storeValue(t types.Type, contract []*types.Func) bool {
	if t == nil {
		return false
	}
	iface, ok := t.Underlying().(*types.Interface)
	if !ok || iface.NumMethods() == 0 {
		return false
	}
	for m := range iface.Methods() {
		if !slices.ContainsFunc(contract, func(c *types.Func) bool {
			return c.Name() == m.Name() && types.Identical(c.Type(), m.Type())
		}) {
			return false
		}
	}
	return true
}
