// Package location opens a corpus from what a user typed to name it: a --db
// value (a SQLite path, a postgres:// URL, a libpq keyword/value string) or
// a SCHEME:ARG source (jsonl:, dsh-sqlite:, dsh-home:, dsh:). Each form is
// one entry of a registry (Schemes) saying how its argument is parsed, how
// it is opened read-only as a Corpus, how an import reads it and, for a dsh
// database, how it is opened for writing. The CLI's flags, usage texts and
// shell completion are generated from the registry, and anything else that
// opens a corpus (a server) calls Open as the CLI does.
package location

import (
	"context"
	"fmt"
	"strings"

	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/dshformat"
	"github.com/dsh-project/dsh/internal/pgstore"
)

// Use says where a form is typed.
type Use int

const (
	// SourceUse: SCHEME:ARG, as --source or import's SOURCE.
	SourceUse Use = iota
	// DBUse: a --db value, which has no prefix; its form is recognised
	// (Scheme.match).
	DBUse
)

// Scheme is one registered form of location.
type Scheme struct {
	// Name is the prefix before the colon of a source ("jsonl"), or for a
	// --db form the name it is documented by ("sqlite").
	Name string
	Use  Use
	// Arg is how the argument is written in usage texts: PATH, [PATH]
	// (optional), PATH_OR_URL.
	Arg string
	// Help says what the form names, for help texts.
	Help string
	// TakesCache says whether --source-cache (DSH's projection cache)
	// applies: DSH's own corpora only.
	TakesCache bool

	// match recognises a --db value in this form (DBUse only).
	match func(arg string) bool
	// parse checks the argument and returns it as the opener wants it (a
	// default filled in, a path made absolute).
	parse func(arg string) (string, error)
	// open opens the location read-only as a corpus.
	open func(ctx context.Context, spec Spec, o Options) (*Corpus, error)
	// importSource opens the location read-only as an import's source.
	importSource func(ctx context.Context, spec Spec, o Options) (dshformat.Source, error)
	// store opens a dsh database (the --db forms and dsh:); writable
	// asks for the writing open, which creates and migrates.
	store func(ctx context.Context, arg string, o Options, writable bool) (Store, error)
}

// Form is the scheme as usage texts write it: jsonl:PATH for a source,
// the argument alone for a --db form.
func (s *Scheme) Form() string {
	if s.Use == DBUse {
		return s.Arg
	}
	return s.Name + ":" + s.Arg
}

// Prefix is what a source begins with ("jsonl:"); "" for a --db form.
func (s *Scheme) Prefix() string {
	if s.Use == DBUse {
		return ""
	}
	return s.Name + ":"
}

// registry is every form, in the order usage texts list them. A --db value
// takes the first DBUse form that matches it; sqlite, matching anything,
// comes last.
// It is filled in init: the schemes' openers look forms up in it.
var registry []*Scheme

func init() {
	registry = []*Scheme{
		jsonlScheme,
		dshSQLiteScheme,
		dshHomeScheme,
		dshScheme,
		postgresURLScheme,
		postgresKeywordScheme,
		sqliteScheme,
	}
}

// Schemes returns the registered forms typed as u, in usage order.
func Schemes(u Use) []*Scheme {
	var out []*Scheme
	for _, s := range registry {
		if s.Use == u {
			out = append(out, s)
		}
	}
	return out
}

func lookup(u Use, name string) *Scheme {
	for _, s := range registry {
		if s.Use == u && s.Name == name {
			return s
		}
	}
	return nil
}

// Spec is a parsed location: its scheme's name and its argument.
type Spec struct {
	Scheme string
	Arg    string
	use    Use
}

// IsSource says whether the spec was typed as SCHEME:ARG (not as --db).
func (s Spec) IsSource() bool { return s.use == SourceUse }

// String names the location in messages: SCHEME:ARG for a source, the
// value for --db; a database password is never shown.
func (s Spec) String() string {
	arg := pgstore.Redact(s.Arg)
	if s.use == DBUse {
		return arg
	}
	return s.Scheme + ":" + arg
}

func (s Spec) scheme() *Scheme { return lookup(s.use, s.Scheme) }

// ParseSource reads SCHEME:ARG, SCHEME being one of Schemes(SourceUse).
// dsh-home may be written without its colon (DSH's default home). A bad
// source is a dsherr USAGE error naming the forms there are.
func ParseSource(s string) (Spec, error) {
	name, arg, ok := strings.Cut(s, ":")
	if !ok && s == dshHomeName {
		name, ok = s, true
	}
	sc := lookup(SourceUse, name)
	switch {
	case !ok:
		return Spec{}, dsherr.New(dsherr.Usage, "source %q: want %s", s, SourceForms())
	case sc == nil:
		return Spec{}, dsherr.New(dsherr.Usage, "source %q: unknown kind %q (want %s)", s, name, sourceNames())
	}
	arg, err := sc.parse(arg)
	if err != nil {
		return Spec{}, fmt.Errorf("source %q: %w", s, err)
	}
	return Spec{Scheme: sc.Name, Arg: arg, use: SourceUse}, nil
}

// ParseDB reads a --db value: the first --db form that recognises it. A
// SQLite path is made absolute ("~/" is the user's home); a PostgreSQL
// connection string is kept as written.
func ParseDB(s string) (Spec, error) {
	sc := dbForm(s)
	arg, err := sc.parse(s)
	if err != nil {
		return Spec{}, err
	}
	return Spec{Scheme: sc.Name, Arg: arg, use: DBUse}, nil
}

// SourceForms lists the source forms for messages and usage texts:
// "jsonl:PATH, dsh-sqlite:PATH, dsh-home:[PATH] or dsh:PATH_OR_URL".
func SourceForms() string {
	var forms []string
	for _, s := range Schemes(SourceUse) {
		forms = append(forms, s.Form())
	}
	return orList(forms)
}

// SourceFormsSynopsis is the source forms as a command synopsis writes
// them: jsonl:PATH|dsh-sqlite:PATH|….
func SourceFormsSynopsis() string {
	var forms []string
	for _, s := range Schemes(SourceUse) {
		forms = append(forms, s.Form())
	}
	return strings.Join(forms, "|")
}

// SourceHelp describes every source form, each with what it names.
func SourceHelp() string {
	var forms []string
	for _, s := range Schemes(SourceUse) {
		forms = append(forms, s.Form()+" ("+s.Help+")")
	}
	return orList(forms)
}

// DBHelp describes every --db form, each with what it names, in the order
// a value is recognised (anything else is a SQLite path).
func DBHelp() string {
	var forms []string
	for _, s := range Schemes(DBUse) {
		forms = append(forms, s.Form()+" ("+s.Help+")")
	}
	return orList(forms)
}

// CachePrefixes lists the prefixes of the sources --source-cache applies
// to: "jsonl:, dsh-sqlite: or dsh-home:".
func CachePrefixes() string {
	var forms []string
	for _, s := range Schemes(SourceUse) {
		if s.TakesCache {
			forms = append(forms, s.Prefix())
		}
	}
	return orList(forms)
}

// sourceNames is "jsonl, dsh-sqlite, dsh-home or dsh".
func sourceNames() string {
	var names []string
	for _, s := range Schemes(SourceUse) {
		names = append(names, s.Name)
	}
	return orList(names)
}

// orList joins "a, b or c".
func orList(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " or " + items[len(items)-1]
}
