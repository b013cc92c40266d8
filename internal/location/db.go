package location

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/dshformat"
	"github.com/dsh-project/dsh/internal/pgstore"
	"github.com/dsh-project/dsh/internal/sqlitepersist"
	"github.com/dsh-project/dsh/internal/subagent"
	"github.com/dsh-project/dsh/internal/transfer"
)

// Store is an open dsh database on either backend: the embedded SQLite file
// or a PostgreSQL catalog. Its users see the backend contract and nothing of
// the dialect.
type Store interface {
	backend.Backend
	// Path names the database in output: the SQLite file's absolute path,
	// or the URL with its password redacted.
	Path() string
	SchemaVersion(ctx context.Context) (int, error)
}

const dshName = "dsh"

// The --db forms, recognised in this order, and dsh:, which names a dsh
// database as a source.
var (
	postgresURLScheme = &Scheme{
		Name: "postgres", Use: DBUse, Arg: "postgres://USER@HOST/DB",
		Help:  "a PostgreSQL catalog; postgresql:// too",
		match: pgstore.IsURL,
		parse: keep,
		store: openPostgres,
		open:  openDB,
	}
	postgresKeywordScheme = &Scheme{
		Name: "postgres-keyword", Use: DBUse, Arg: "host=HOST dbname=DB",
		Help:  "a PostgreSQL catalog as a libpq keyword/value string",
		match: pgstore.IsConnString,
		parse: keep,
		store: openPostgres,
		open:  openDB,
	}
	sqliteScheme = &Scheme{
		Name: "sqlite", Use: DBUse, Arg: "PATH",
		Help:  "dsh's SQLite file; ~/ is the home directory",
		match: func(string) bool { return true },
		parse: absPath,
		store: openSQLite,
		open:  openDB,
	}
	dshScheme = &Scheme{
		Name: dshName, Use: SourceUse, Arg: "PATH_OR_URL",
		Help:         "a dsh database, a SQLite file or a PostgreSQL URL, read-only",
		parse:        parseDSH,
		store:        openDSHStore,
		open:         openDSHDatabase,
		importSource: openStoreSource,
	}
)

func keep(arg string) (string, error) { return arg, nil }

// absPath resolves a SQLite path as --db takes it: "~/" is the user's home,
// a relative path is made absolute.
func absPath(s string) (string, error) {
	if rest, ok := strings.CutPrefix(s, "~/"); ok {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("expand %s: %w", s, err)
		}
		s = filepath.Join(home, rest)
	}
	abs, err := filepath.Abs(s)
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", s, err)
	}
	return abs, nil
}

func openSQLite(ctx context.Context, arg string, o Options, writable bool) (Store, error) {
	if writable {
		so := o.SQLite
		so.Progress = o.MigrationProgress
		return nilOnError(sqlitepersist.Open(ctx, arg, so))
	}
	return nilOnError(sqlitepersist.OpenReadOnly(ctx, arg, o.SQLite))
}

func openPostgres(ctx context.Context, arg string, o Options, writable bool) (Store, error) {
	if writable {
		return nilOnError(pgstore.OpenWithProgress(ctx, arg, o.MigrationProgress))
	}
	return nilOnError(pgstore.OpenReadOnly(ctx, arg))
}

// nilOnError keeps a failed open's nil pointer from becoming a non-nil
// Store.
func nilOnError[S Store](s S, err error) (Store, error) {
	if err != nil {
		return nil, err
	}
	return s, nil
}

// openDB opens a --db database read-only as a corpus: listed with its
// checkpoint cache, its live leases and one snapshot per listing.
func openDB(ctx context.Context, spec Spec, o Options) (*Corpus, error) {
	st, err := OpenStoreReadOnly(ctx, spec, o)
	if err != nil {
		return nil, err
	}
	return storeCorpus(st), nil
}

func storeCorpus(st Store) *Corpus {
	return &Corpus{
		Reader: st,
		lister: func(n int) *subagent.Lister { return subagent.NewStoreLister(st, st, n) },
		close:  st.Close,
	}
}

// parseDSH takes what --db takes: the database's form decides its backend.
// A relative SQLite path is kept as typed, so messages name it so; the
// store makes it absolute.
func parseDSH(arg string) (string, error) {
	if arg == "" {
		return requirePath(arg)
	}
	return arg, nil
}

// dbForm is the --db form of a value (or of a dsh: source's argument): the
// first that recognises it; sqlite recognises anything.
func dbForm(arg string) *Scheme {
	for _, sc := range Schemes(DBUse) {
		if sc.match(arg) {
			return sc
		}
	}
	return sqliteScheme
}

// openDSHStore opens a dsh: source's database read-only; an error names
// the source, keeping the store's code (a missing file, DSH's schema-17
// store, a directory: STORE_UNAVAILABLE).
func openDSHStore(ctx context.Context, arg string, o Options, writable bool) (Store, error) {
	spec := Spec{Scheme: dshName, Arg: arg, use: SourceUse}
	if writable {
		return nil, dsherr.New(dsherr.Usage, "%s is a source, only read", spec)
	}
	st, err := dbForm(arg).store(ctx, arg, o, false)
	if err == nil || ctx.Err() != nil {
		return st, err
	}
	code := dsherr.CodeOf(err)
	if code == "" {
		code = dsherr.StoreUnavailable
	}
	if errors.Is(err, backend.ErrNoDatabase) {
		// The store's own message ends with "run dsh init": right for --db,
		// wrong for a source, which dsh init would not create where it is read.
		return nil, &dsherr.Error{Code: code, Err: err,
			Msg: fmt.Sprintf("%s: no dsh database there (nothing was created: a source is only read)", spec)}
	}
	return nil, dsherr.Wrap(code, err, "%s", spec)
}

// openDSHDatabase reads a dsh database in place as a source: exactly as
// --db reads it (read-only, its cache and leases), and named dsh:… in
// messages; one holding no session is an empty source.
func openDSHDatabase(ctx context.Context, spec Spec, o Options) (_ *Corpus, err error) {
	st, err := OpenStoreReadOnly(ctx, spec, o)
	if err != nil {
		return nil, err
	}
	c := storeCorpus(st)
	defer func() {
		if err != nil {
			c.Close()
		}
	}()
	c.Empty, err = checkEmpty(ctx, spec, st, 0, o)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// openStoreSource offers a dsh database's sessions to an import as stored
// (transfer.StoreSource); closing the source closes the database.
func openStoreSource(ctx context.Context, spec Spec, o Options) (dshformat.Source, error) {
	st, err := OpenStoreReadOnly(ctx, spec, o)
	if err != nil {
		return nil, err
	}
	return closingSource{Source: transfer.StoreSource(st, st.Path()), st: st}, nil
}

// closingSource closes the database a dsh: source was read from.
type closingSource struct {
	dshformat.Source
	st Store
}

func (s closingSource) Close() error { return s.st.Close() }
