package location

import (
	"context"
	"errors"
	"fmt"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/dshcompat"
	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/dshformat"
	"github.com/dsh-project/dsh/internal/sqlitepersist"
	"github.com/dsh-project/dsh/internal/subagent"
)

// Options are what opening a location may need besides the location.
type Options struct {
	// SQLite configures a SQLite database's connection (its busy timeout).
	SQLite sqlitepersist.Options
	// MigrationProgress, when set, is told how far a migration's
	// back-fill has got as a writable store (either kind) is migrated.
	MigrationProgress func(name string, done, total int)
	// Profile is whose rules the corpus is read by: under DSH 0.1.0-rc.8
	// only DSH's aggregate cache file is used, as rc.8 reads no other.
	Profile dshcompat.Profile
	// CacheFile is DSH's projection cache to read a DSH corpus with
	// (--source-cache): the rc.8 file or the per-record directory. Only
	// the schemes that TakesCache accept it.
	CacheFile string
	// Strict makes a source that holds no session a NOT_FOUND error; by
	// default it is a warning.
	Strict bool
	// Warn receives what does not stop the read: files that yield no
	// session, a projection cache that cannot be used, an empty source.
	// Nil drops them.
	Warn func(string)
	// Enumerated, when set, runs once a source's sessions are enumerated
	// and before any log is read (a test makes a file vanish there).
	Enumerated func(Spec)
	// Focus names the one session the read is about (a listing or an
	// audit of its children, a session shown): a JSONL corpus then keeps
	// only its and its children's headers whole while it is read
	// (dshformat.OpenJSONLFocused), and its answers are the same. "" for
	// none; an import never has one.
	Focus string
	// ImportChunk is how many sessions of a JSONL tree an import holds
	// the headers of at a time; 0 for the default.
	ImportChunk int
}

func (o Options) warn(msg string) {
	if o.Warn != nil {
		o.Warn(msg)
	}
}

func (o Options) enumerated(spec Spec) {
	if o.Enumerated != nil {
		o.Enumerated(spec)
	}
}

// Reader is what a read command (list, diagnose, session show, session
// events) reads: the read side of the backend contract with its leases and
// checkpoint records.
type Reader interface {
	backend.Reader
	backend.LeaseReader
	backend.CheckpointReader
}

// Corpus is a location opened read-only: whatever it is, a reader that
// writes nothing, its listing and its Close.
type Corpus struct {
	// Reader reads the corpus.
	Reader Reader
	// Spec is the location opened.
	Spec Spec
	// Empty says the source holds no session (already warned about). A
	// --db database is never called empty.
	Empty bool

	lister func(coldConcurrency int) *subagent.Lister
	close  func() error
}

// Lister builds the listing over the corpus: for a dsh database with its
// checkpoint cache and one snapshot, for DSH's corpora with DSH's cache
// file.
func (c *Corpus) Lister(coldConcurrency int) *subagent.Lister { return c.lister(coldConcurrency) }

// Close releases the corpus.
func (c *Corpus) Close() error { return c.close() }

// View runs fn on one consistent snapshot of the corpus when it offers one
// (a dsh database), on the corpus itself otherwise (DSH's corpora are read
// once).
func (c *Corpus) View(ctx context.Context, fn func(Reader) error) error {
	if v, ok := c.Reader.(backend.Transactor); ok {
		return v.View(ctx, func(view backend.Store) error { return fn(view) })
	}
	return fn(c.Reader)
}

// LookupError names the id, and the source it was looked for in, when the
// corpus does not know it; other errors are returned as they are.
func (c *Corpus) LookupError(id string, err error) error {
	if !errors.Is(err, backend.ErrNotFound) {
		return err
	}
	if !c.Spec.IsSource() {
		return &dsherr.Error{Code: dsherr.NotFound, Msg: fmt.Sprintf("no session with id %q", id), Err: err}
	}
	return &dsherr.Error{Code: dsherr.NotFound, Msg: fmt.Sprintf("no session with id %q in %s", id, c.Spec), Err: err}
}

// Open opens the location read-only as a corpus. It never creates,
// migrates or writes anything, in the corpus or beside it. A source that
// holds no session is a warning (Options.Strict: NOT_FOUND).
func Open(ctx context.Context, spec Spec, o Options) (*Corpus, error) {
	sc := spec.scheme()
	if sc == nil {
		return nil, dsherr.New(dsherr.Usage, "location %s: unknown kind %q", spec, spec.Scheme)
	}
	if o.CacheFile != "" && !sc.TakesCache {
		return nil, dsherr.New(dsherr.Usage, "--source-cache is DSH's projection cache, read with %s, not with %s", CachePrefixes(), spec)
	}
	c, err := sc.open(ctx, spec, o)
	if err != nil {
		return nil, err
	}
	c.Spec = spec
	return c, nil
}

// checkEmpty warns about (Strict: refuses) a source with no session:
// DSH would list it as empty, and a mistyped path must not pass for a
// clean corpus in silence. A source with files that yield no session
// (skipped, already warned about) is not empty.
func checkEmpty(ctx context.Context, spec Spec, r backend.SessionLister, skipped int, o Options) (empty bool, err error) {
	if skipped > 0 {
		return false, nil
	}
	has, err := r.HasSessions(ctx)
	if err != nil || has {
		return false, err
	}
	msg := EmptyMessage(spec)
	if o.Strict {
		return true, dsherr.New(dsherr.NotFound, "%s", msg)
	}
	o.warn(msg)
	return true, nil
}

// OpenStore opens a dsh database named by a --db spec for writing,
// creating (SQLite) and migrating it on first use.
func OpenStore(ctx context.Context, spec Spec, o Options) (Store, error) {
	sc := spec.scheme()
	if sc == nil || sc.store == nil {
		return nil, dsherr.New(dsherr.Usage, "%s is not a dsh database to write to", spec)
	}
	return sc.store(ctx, spec.Arg, o, true)
}

// OpenStoreReadOnly opens a dsh database — a --db spec, or a dsh: source —
// for reading. It never creates, migrates or modifies it (PostgreSQL:
// read-only transactions); a missing database is an error wrapping
// backend.ErrNoDatabase.
func OpenStoreReadOnly(ctx context.Context, spec Spec, o Options) (Store, error) {
	sc := spec.scheme()
	if sc == nil || sc.store == nil {
		return nil, dsherr.New(dsherr.Usage, "%s is not a dsh database (want --db or dsh:PATH_OR_URL)", spec)
	}
	return sc.store(ctx, spec.Arg, o, false)
}

// ImportSource opens a source read-only as what an import reads: DSH's
// corpora as found, a dsh database as stored. Closing it closes what it
// opened.
func ImportSource(ctx context.Context, spec Spec, o Options) (dshformat.Source, error) {
	sc := spec.scheme()
	if sc == nil || sc.importSource == nil || !spec.IsSource() {
		return nil, dsherr.New(dsherr.Usage, "%s: not an import source (want %s)", spec, SourceForms())
	}
	return sc.importSource(ctx, spec, o)
}
