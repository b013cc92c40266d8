package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestArchitectureDocNamesExist keeps docs/architecture.md true to the code:
// every package path, file and Go identifier it names must exist in the
// module. It reads what the document names in backticks, plus, inside its
// fenced diagrams, `pkg.Name` references to the module's own packages and
// cmd/ or internal/ paths. Identifiers are checked against a go/parser scan
// of the module's Go files (tests included: the document may name a test):
//
//   - `internal/x`, `cmd/dsh`, `cmd/dsh/list.go`: the directory holds Go
//     files, or the file exists; a bare `source.go`: some package has it.
//   - `pkg.Name` (pkg one of the module's package names): Name is declared at
//     the top level of that package, or is a method or field of a type in it.
//   - `pkg.Type.Member` and `Type.Member` (Type declared in the module):
//     Member is a method, field or interface method of that type.
//   - a bare exported identifier (`ChildListingCold`): declared somewhere in
//     the module (top level, method, field or interface method).
//
// Lowercase words, ALL_CAPS codes, snake_case columns and command lines are
// not Go identifiers and are not checked; the few dotted names that are not
// this module's Go are listed in notGo with the reason.
func TestArchitectureDocNamesExist(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	decls := scanModuleDecls(t, root)

	var stale []string
	seen := map[string]bool{}
	for _, name := range architectureDocNames(string(doc)) {
		if seen[name] {
			continue
		}
		seen[name] = true
		if !decls.names(root, name) {
			stale = append(stale, name)
		}
	}
	if len(stale) > 0 {
		t.Errorf("docs/architecture.md names %d things the code does not have (renamed or removed? fix the document):\n  %s",
			len(stale), strings.Join(stale, "\n  "))
	}
	// The scan must have found what it checks, or the test checks nothing.
	if len(seen) < 50 {
		t.Errorf("found only %d names in docs/architecture.md; the extraction is broken", len(seen))
	}
}

// notGo lists dotted names in docs/architecture.md that are not this
// module's Go, each with why.
var notGo = map[string]string{
	"JSON.stringify": "JavaScript's serializer, whose output jsjson reproduces",
}

var (
	backtickSpan = regexp.MustCompile("`([^`\n]+)`")
	goPathName   = regexp.MustCompile(`^(cmd|internal)/[a-z0-9_/]+(\.go)?$`)
	goIdentName  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*){0,2}$`)
	diagramRef   = regexp.MustCompile(`\b(?:(?:cmd|internal)/[a-z0-9_/]+(?:\.go)?|[A-Za-z][A-Za-z0-9]*\.[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)?)`)
)

// architectureDocNames returns the candidate names of the document, in
// order: backtick spans outside fences, and references inside fences.
func architectureDocNames(doc string) []string {
	var names []string
	inFence := false
	for _, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
			continue
		}
		if inFence {
			names = append(names, diagramRef.FindAllString(line, -1)...)
			continue
		}
		for _, m := range backtickSpan.FindAllStringSubmatch(line, -1) {
			span := strings.TrimSuffix(m[1], "()")
			if goPathName.MatchString(span) || goIdentName.MatchString(span) {
				names = append(names, span)
			}
		}
	}
	return names
}

// moduleDecls is what a go/parser scan found in the module.
type moduleDecls struct {
	pkgs    map[string]map[string]bool // package name → top-level names
	members map[string]map[string]bool // type name → methods and fields, over all packages
	typePkg map[string]map[string]bool // package name → Type.Member
	any     map[string]bool            // every declared name, members included
	files   map[string]bool            // base names of the module's Go files
}

func scanModuleDecls(t *testing.T, root string) moduleDecls {
	t.Helper()
	d := moduleDecls{
		pkgs:    map[string]map[string]bool{},
		members: map[string]map[string]bool{},
		typePkg: map[string]map[string]bool{},
		any:     map[string]bool{},
		files:   map[string]bool{},
	}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() {
			if n := e.Name(); path != root && (n == "testdata" || strings.HasPrefix(n, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		d.files[e.Name()] = true
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		d.addFile(f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func (d moduleDecls) add(m map[string]map[string]bool, key, name string) {
	if m[key] == nil {
		m[key] = map[string]bool{}
	}
	m[key][name] = true
	d.any[name] = true
}

func (d moduleDecls) addMember(pkg, typ, name string) {
	d.add(d.members, typ, name)
	d.add(d.typePkg, pkg, typ+"."+name)
}

func (d moduleDecls) addFile(f *ast.File) {
	pkg := f.Name.Name
	if d.pkgs[pkg] == nil {
		d.pkgs[pkg] = map[string]bool{}
	}
	for _, decl := range f.Decls {
		switch decl := decl.(type) {
		case *ast.FuncDecl:
			if decl.Recv == nil || len(decl.Recv.List) == 0 {
				d.add(d.pkgs, pkg, decl.Name.Name)
				continue
			}
			d.addMember(pkg, receiverType(decl.Recv.List[0].Type), decl.Name.Name)
		case *ast.GenDecl:
			for _, spec := range decl.Specs {
				switch spec := spec.(type) {
				case *ast.ValueSpec:
					for _, n := range spec.Names {
						d.add(d.pkgs, pkg, n.Name)
					}
				case *ast.TypeSpec:
					d.add(d.pkgs, pkg, spec.Name.Name)
					d.addTypeMembers(pkg, spec.Name.Name, spec.Type)
				}
			}
		}
	}
}

func (d moduleDecls) addTypeMembers(pkg, typ string, expr ast.Expr) {
	var fields *ast.FieldList
	switch x := expr.(type) {
	case *ast.StructType:
		fields = x.Fields
	case *ast.InterfaceType:
		fields = x.Methods
	default:
		return
	}
	for _, f := range fields.List {
		for _, n := range f.Names {
			d.addMember(pkg, typ, n.Name)
		}
		if len(f.Names) == 0 { // embedded: the member is reachable by its type's name
			d.addMember(pkg, typ, receiverType(f.Type))
		}
	}
}

// receiverType names the type of a receiver or embedded field expression.
func receiverType(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.StarExpr:
		return receiverType(x.X)
	case *ast.IndexExpr:
		return receiverType(x.X)
	case *ast.IndexListExpr:
		return receiverType(x.X)
	case *ast.SelectorExpr:
		return x.Sel.Name
	case *ast.Ident:
		return x.Name
	}
	return ""
}

// names reports whether the module has what name refers to; names that are
// not Go identifiers of the kinds described on the test count as present.
func (d moduleDecls) names(root, name string) bool {
	if _, ok := notGo[name]; ok {
		return true
	}
	if base, ok := strings.CutSuffix(name, ".go"); ok && goIdentName.MatchString(base) && !strings.Contains(base, ".") {
		return d.files[name]
	}
	if goPathName.MatchString(name) {
		if strings.HasSuffix(name, ".go") {
			_, err := os.Stat(filepath.Join(root, name))
			return err == nil
		}
		matches, _ := filepath.Glob(filepath.Join(root, name, "*.go"))
		return len(matches) > 0
	}
	parts := strings.Split(name, ".")
	if len(parts) == 1 {
		if !isCamelExported(name) {
			return true
		}
		return d.any[name]
	}
	if top, ok := d.pkgs[parts[0]]; ok && parts[0] != "main" {
		rest := strings.Join(parts[1:], ".")
		return top[rest] || d.typePkg[parts[0]][rest]
	}
	if len(parts) == 2 {
		if m, ok := d.members[parts[0]]; ok {
			return m[parts[1]]
		}
	}
	// A dotted name that is neither a package's nor a type's member: an
	// unknown package or type, which is stale (or belongs in notGo).
	return false
}

// isCamelExported reports whether s reads as an exported Go identifier
// rather than a wire code or column: upper-case first, a lower-case letter
// somewhere, no underscore.
func isCamelExported(s string) bool {
	if s == "" || s[0] < 'A' || s[0] > 'Z' || strings.Contains(s, "_") {
		return false
	}
	return strings.ContainsAny(s, "abcdefghijklmnopqrstuvwxyz")
}
