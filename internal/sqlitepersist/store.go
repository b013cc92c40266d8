// Package sqlitepersist is dsh's durable session store: one SQLite file holding
// session headers, their append-only DSH event logs, leases and projection
// checkpoint records. It implements the whole backend contract
// (backend.Backend) and is the only package that speaks dsh's SQLite schema.
//
// Every write path validates what it writes the way DSH validates a log it
// restores, so a log written by dsh is always loadable by DSH's rules. Reads
// mirror DSH's committed/torn rule: damage after the last decodable turn/end
// is a torn tail that Inspect cuts off in its result and Load removes; damage
// before it is corruption.
package sqlitepersist

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/sqliteread"
	"github.com/dsh-project/dsh/internal/sqlstore"
	"modernc.org/sqlite"
)

// DefaultBusyTimeout is how long a connection waits for another process's
// write lock before failing with SQLITE_BUSY.
const DefaultBusyTimeout = 5 * time.Second

// walSizeLimit caps the size the write-ahead log is left at after a
// checkpoint; the file itself is kept (see persistentWAL).
const walSizeLimit = 4 << 20

// Options configures a Store.
type Options struct {
	// BusyTimeout is the SQLite busy timeout; zero means DefaultBusyTimeout
	// unless BusyTimeoutSet.
	BusyTimeout time.Duration
	// BusyTimeoutSet makes BusyTimeout apply as given, zero included: a
	// configured busyTimeoutMs of 0 means "fail at once", not "default".
	BusyTimeoutSet bool
	// Clock is the store's clock, the one leases are judged by; nil means
	// time.Now. Every process sharing a file must use the same clock, so
	// only tests set it.
	Clock func() time.Time
	// Progress, when set, is told how far a migration's back-fill has got
	// (migrations.Migration.Backfill): done of total sessions of
	// migration name, from 0 to total.
	Progress func(name string, done, total int)
}

func (o Options) busyTimeoutMillis() (int64, error) {
	d := o.BusyTimeout
	if d == 0 && !o.BusyTimeoutSet {
		d = DefaultBusyTimeout
	}
	if d < 0 {
		return 0, dsherr.New(dsherr.InvalidInput, "busy timeout must not be negative (got %s)", d)
	}
	return d.Milliseconds(), nil
}

// Querier runs SQL on the store's file: *sql.DB outside a transaction, the
// *sql.Tx inside View or Update. Outside this package only tests
// (and the corpus generator's deliberate damage) use it.
type Querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Store is an open session store. The Store returned by Open or OpenReadOnly
// is safe for concurrent use; the views handed to View and Update
// callbacks are bound to one transaction and valid only inside the callback.
type Store struct {
	// Core holds the methods whose SQL both stores share.
	sqlstore.Core

	db       *sql.DB
	path     string
	readOnly bool

	// tx is set on a view: every method of the view runs inside it.
	tx *sql.Tx
	// txWritable distinguishes an Update view from a View view.
	txWritable bool
	// stmts runs an Update view's statements (nil on other stores).
	stmts *stmtCache
	// clock is Options.Clock.
	clock func() time.Time
	// private is the temporary directory holding the private copy a
	// read-only store reads (see privateCopy); Close removes it.
	private string
	// immutable is set on a read-only store opened with immutable=1
	// (package sqliteread): it never sees another process's commits.
	immutable bool
}

// Open opens the store at path for reading and writing, creating the file
// (0600, in a 0700 directory) when it is missing and applying pending
// migrations. A symlink or non-regular file at path, or a symlinked parent
// directory, is refused.
//
// Any number of processes may be the first to open a new file at once: each
// waits for the others (up to the busy timeout) and finds the store they
// created, never a half-made one.
func Open(ctx context.Context, path string, o Options) (*Store, error) {
	busyMillis, err := o.busyTimeoutMillis()
	if err != nil {
		return nil, err
	}
	abs, err := prepareWritablePath(path)
	if err != nil {
		return nil, err
	}
	if err := checkWritableFiles(abs); err != nil {
		return nil, err
	}
	// SQLite does not call the busy handler everywhere an open can meet
	// another first user: switching a new file to WAL mode, or reading it
	// while another connection recovers its -wal, fails with SQLITE_BUSY at
	// once. Every step of an open is safe to repeat, so a busy open is
	// retried until the busy timeout has passed.
	deadline := time.Now().Add(time.Duration(busyMillis) * time.Millisecond)
	for wait := time.Millisecond; ; wait = min(2*wait, 50*time.Millisecond) {
		s, err := openAt(ctx, abs, busyMillis, o)
		if err == nil || !isBusy(err) || time.Now().Add(wait).After(deadline) {
			return s, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
	}
}

// sqliteBusy is SQLITE_BUSY, the primary code of every busy variant.
const sqliteBusy = 5

func isBusy(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqliteBusy
}

func openAt(ctx context.Context, abs string, busyMillis int64, o Options) (*Store, error) {
	// The connection pragmas below switch the file to WAL, which rewrites
	// its header: a file dsh must refuse is refused before that.
	if err := precheckIdentity(ctx, abs, busyMillis); err != nil {
		return nil, err
	}
	q := url.Values{}
	q.Add("_pragma", "busy_timeout("+strconv.FormatInt(busyMillis, 10)+")")
	q.Add("_pragma", "trusted_schema(OFF)")
	q.Add("_pragma", "foreign_keys(ON)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "journal_size_limit("+strconv.Itoa(walSizeLimit)+")")
	q.Add("_pragma", "synchronous(FULL)")
	// Savepoint journals (an import nests each session of a batch in one)
	// hold the pages a savepoint would restore; in a temp file that is a
	// write syscall per page. They matter only until the savepoint is
	// released, never for crash recovery (the WAL is), so memory is enough.
	q.Add("_pragma", "temp_store(MEMORY)")
	// Writes run in BEGIN IMMEDIATE so a writer takes the lock before it
	// reads the tail it is going to extend; read snapshots begin deferred.
	q.Set("_txlock", "immediate")
	connector, err := sqlite.NewConnector(fileURI(abs, q))
	if err != nil {
		return nil, dsherr.Wrap(dsherr.StoreUnavailable, err, "open %s", abs)
	}
	db := sql.OpenDB(persistentWAL{connector})
	s := (&Store{db: db, path: abs, clock: o.Clock}).bind()
	if err := s.checkPragmas(ctx, map[string]int64{
		"busy_timeout":   busyMillis,
		"trusted_schema": 0,
		"foreign_keys":   1,
		"synchronous":    2,
		"temp_store":     2,
		"query_only":     0,
	}, "wal"); err != nil {
		db.Close()
		return nil, err
	}
	// Checked again now that SQLite has the file open: a file swapped for a
	// symlink between the first check and the open is still refused.
	if err := checkDBFile(abs); err != nil {
		db.Close()
		return nil, err
	}
	if err := migrate(ctx, db, abs, o.Progress); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// OpenReadOnly opens an existing store for reading only (SQLite mode=ro plus
// query_only). It never creates, migrates or modifies the database, and
// writes nothing beside it: stores written by dsh keep their -wal and -shm
// (see persistentWAL), whose index is mapped read-only; a file archived or
// copied without them is opened immutable, which works in a read-only
// directory (package sqliteread has the rules). A -wal holding a commit
// that no usable index covers (a writer killed between its commit and the
// index update) is read through a private copy (see openPrivateCopy). A
// missing file is an error wrapping ErrNoDatabase.
func OpenReadOnly(ctx context.Context, path string, o Options) (*Store, error) {
	busyMillis, err := o.busyTimeoutMillis()
	if err != nil {
		return nil, err
	}
	abs, err := checkReadablePath(path)
	if err != nil {
		return nil, err
	}
	q := url.Values{}
	open, private := abs, ""
	err = sqliteread.Query(abs, q)
	if errors.Is(err, sqliteread.ErrWALWithoutIndex) {
		q = url.Values{}
		private, err = privateCopy(ctx, abs)
		if err != nil {
			if p := readProblem(abs); p != nil {
				return nil, p
			}
			return nil, dsherr.Wrap(dsherr.StoreUnavailable, err,
				"open %s read-only: its -wal holds a commit no index covers, and reading it through a private copy failed; run dsh init once, which recovers the log", abs)
		}
		// The copy is this process's own: opening it for writing
		// rebuilds its index there, and query_only keeps it unchanged.
		open = filepath.Join(private, filepath.Base(abs))
	} else if err != nil {
		if p := readProblem(abs); p != nil {
			return nil, p
		}
		return nil, dsherr.Wrap(dsherr.StoreUnavailable, err, "open %s read-only", abs)
	}
	q.Add("_pragma", "busy_timeout("+strconv.FormatInt(busyMillis, 10)+")")
	q.Add("_pragma", "trusted_schema(OFF)")
	q.Add("_pragma", "query_only(1)")
	db, err := sql.Open("sqlite", fileURI(open, q))
	if err != nil {
		os.RemoveAll(private)
		return nil, dsherr.Wrap(dsherr.StoreUnavailable, err, "open %s read-only", abs)
	}
	s := (&Store{db: db, path: abs, readOnly: true, clock: o.Clock, private: private, immutable: q.Get("immutable") == "1"}).bind()
	if err := s.checkPragmas(ctx, map[string]int64{
		"busy_timeout":   busyMillis,
		"trusted_schema": 0,
		"query_only":     1,
	}, ""); err != nil {
		s.Close()
		if p := readProblem(abs); p != nil {
			return nil, p
		}
		return nil, err
	}
	if err := checkReadableSchema(ctx, db, abs); err != nil {
		s.Close()
		if p := readProblem(abs); p != nil {
			return nil, p
		}
		return nil, err
	}
	return s, nil
}

// privateCopy copies the database at abs and its -wal (not its stale or
// missing -shm) into a new private temporary directory and returns it. It
// serves the one state package sqliteread cannot read without writing
// beside the file: no process has the file open (its -shm is missing, or
// held by no connection), and the -wal holds a commit the index does not
// cover. SQLite must rebuild the index to read that commit, which a read
// command may not do beside the database; in the copy it may. A copy that
// changed under it (a writer opened the file meanwhile) is taken again.
func privateCopy(ctx context.Context, abs string) (dir string, err error) {
	for attempt := 0; ; attempt++ {
		before, err := fileStamps(abs)
		if err != nil {
			return "", err
		}
		dir, err = os.MkdirTemp("", "dsh-read-")
		if err != nil {
			return "", err
		}
		for _, suffix := range []string{"", "-wal"} {
			if err = copyFile(ctx, abs+suffix, filepath.Join(dir, filepath.Base(abs)+suffix)); err != nil {
				os.RemoveAll(dir)
				return "", err
			}
		}
		after, err := fileStamps(abs)
		if err == nil && after == before {
			return dir, nil
		}
		os.RemoveAll(dir)
		if err != nil {
			return "", err
		}
		if attempt == 2 {
			return "", errors.New("the database kept changing while it was copied")
		}
	}
}

// fileStamps is the size and modification time of the database and its
// -wal and -shm, which a writer opening the file changes.
func fileStamps(abs string) (string, error) {
	var b strings.Builder
	for _, suffix := range []string{"", "-wal", "-shm"} {
		fi, err := os.Stat(abs + suffix)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			b.WriteString("-;")
		case err != nil:
			return "", err
		default:
			fmt.Fprintf(&b, "%d %d;", fi.Size(), fi.ModTime().UnixNano())
		}
	}
	return b.String(), nil
}

// copyFile copies src to a new file dst (0600), stopping when ctx ends.
func copyFile(ctx context.Context, src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	buf := make([]byte, 1<<20)
	for {
		if err := ctx.Err(); err != nil {
			out.Close()
			return err
		}
		n, rerr := in.Read(buf)
		if n > 0 {
			if _, err := out.Write(buf[:n]); err != nil {
				out.Close()
				return err
			}
		}
		if errors.Is(rerr, io.EOF) {
			return out.Close()
		}
		if rerr != nil {
			out.Close()
			return rerr
		}
	}
}

// precheckIdentity refuses a non-empty file that is not a dsh store, or is
// one from a newer dsh, reading it as read commands do (package sqliteread),
// so that a refused file gets nothing written beside it. Where that cannot
// read it — a hot rollback journal (a writer crashed mid-transaction after
// something switched the file out of WAL mode), or a -wal whose index is
// missing or stale — the identity is read through a writable connection,
// which recovers the file first, as that writer's own open would have. So
// is a file another first user is switching to WAL mode at this moment
// (the read-only way may read it immutable, without waiting on its locks).
func precheckIdentity(ctx context.Context, abs string, busyMillis int64) error {
	if fi, err := os.Stat(abs); err != nil || fi.Size() == 0 {
		return nil // a new file; a stat failure resurfaces when SQLite opens it
	}
	latest, err := LatestSchemaVersion()
	if err != nil {
		return dsherr.Wrap(dsherr.Internal, err, "embedded migrations")
	}
	q := url.Values{}
	err = sqliteread.Query(abs, q)
	var id fileIdentity
	if err == nil {
		id, err = readIdentityAt(ctx, abs, busyMillis, q)
	}
	if err != nil {
		q = url.Values{}
		q.Set("mode", "rw")
		id, err = readIdentityAt(ctx, abs, busyMillis, q)
	}
	if err != nil {
		return dsherr.Wrap(dsherr.StoreUnavailable, err, "read schema of %s", abs)
	}
	return id.check(abs, latest)
}

func readIdentityAt(ctx context.Context, abs string, busyMillis int64, q url.Values) (fileIdentity, error) {
	q.Add("_pragma", "busy_timeout("+strconv.FormatInt(busyMillis, 10)+")")
	q.Add("_pragma", "trusted_schema(OFF)")
	db, err := sql.Open("sqlite", fileURI(abs, q))
	if err != nil {
		return fileIdentity{}, err
	}
	defer db.Close()
	return readIdentity(ctx, db)
}

// fileURI builds a SQLite file: URI; the path is escaped so that '?', '#'
// and '%' in a file name cannot be read as URI syntax.
func fileURI(abs string, q url.Values) string {
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs), RawQuery: q.Encode()}
	return u.String()
}

// persistentWAL keeps the -wal and -shm files when the last connection
// closes. Without it every close deletes them and the next read-only open has
// to create them again, which a read command must not do.
type persistentWAL struct{ driver.Connector }

func (p persistentWAL) Connect(ctx context.Context) (driver.Conn, error) {
	c, err := p.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	fc, ok := c.(sqlite.FileControl)
	if !ok {
		c.Close()
		return nil, fmt.Errorf("sqlite driver connection %T has no file control", c)
	}
	if _, err := fc.FileControlPersistWAL("main", 1); err != nil {
		c.Close()
		return nil, fmt.Errorf("keep write-ahead log: %w", err)
	}
	return c, nil
}

// checkPragmas reads the connection settings back: a DSN pragma that SQLite
// ignored must not silently leave the store without durability or locking.
func (s *Store) checkPragmas(ctx context.Context, want map[string]int64, journalMode string) error {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return s.openError(err)
	}
	defer conn.Close()
	for name, v := range want {
		var got int64
		if err := conn.QueryRowContext(ctx, "PRAGMA "+name).Scan(&got); err != nil {
			return s.openError(fmt.Errorf("read back PRAGMA %s: %w", name, err))
		}
		if got != v {
			return dsherr.New(dsherr.StoreUnavailable, "open %s: PRAGMA %s is %d, expected %d", s.path, name, got, v)
		}
	}
	if journalMode != "" {
		var got string
		if err := conn.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&got); err != nil {
			return s.openError(fmt.Errorf("read back PRAGMA journal_mode: %w", err))
		}
		if got != journalMode {
			return dsherr.New(dsherr.StoreUnavailable, "open %s: journal_mode is %q, expected %q", s.path, got, journalMode)
		}
	}
	return nil
}

func (s *Store) openError(err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return dsherr.Wrap(dsherr.StoreUnavailable, err, "open %s", s.path)
}

// The store is a complete backend, and keeps what an import refused.
var (
	_ backend.Backend         = (*Store)(nil)
	_ backend.RefusalRecorder = (*Store)(nil)
	_ backend.RefusalReader   = (*Store)(nil)
)

// Close closes the store. Calling it on a transaction view is an error.
func (s *Store) Close() error {
	if s.tx != nil {
		return errors.New("sqlitepersist: Close called on a transaction view")
	}
	err := s.db.Close()
	if s.private != "" {
		if rerr := os.RemoveAll(s.private); rerr != nil && err == nil {
			err = rerr
		}
	}
	return err
}

// Path is the absolute path of the database file.
func (s *Store) Path() string { return s.path }

// ReadOnly reports whether the store was opened with OpenReadOnly.
func (s *Store) ReadOnly() bool { return s.readOnly }

// SchemaVersion is the number of the last migration applied to the file.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	if err := s.Querier().QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return 0, s.storeError(err, "read schema version")
	}
	return v, nil
}

// Querier returns the handle for queries on the store's file: the open
// transaction for a view, the connection pool otherwise.
func (s *Store) Querier() Querier {
	switch {
	case s.stmts != nil:
		return tracedQuerier{s.stmts}
	case s.tx != nil:
		return tracedQuerier{s.tx}
	}
	return tracedQuerier{s.db}
}

// view runs fn with a view whose methods all read one consistent
// snapshot. Inside a view it reuses the view's transaction.
func (s *Store) view(ctx context.Context, fn func(view *Store) error) error {
	if s.tx != nil {
		return fn(s)
	}
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return s.storeError(err, "begin read")
	}
	view := (&Store{db: s.db, path: s.path, readOnly: s.readOnly, tx: tx, clock: s.clock}).bind()
	if err := fn(view); err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return s.storeError(err, "end read")
	}
	return nil
}

// update runs fn with a view bound to one BEGIN IMMEDIATE transaction and
// commits when fn returns nil; any error rolls everything back. Inside an
// update view it nests through a savepoint, so a failed inner write leaves
// no partial rows behind even when the caller's transaction goes on.
func (s *Store) update(ctx context.Context, fn func(tx *Store) error) error {
	if s.readOnly {
		return dsherr.New(dsherr.StoreUnavailable, "store %s is open read-only", s.path)
	}
	if s.tx != nil {
		if !s.txWritable {
			return dsherr.New(dsherr.Internal, "write attempted inside a read snapshot of %s", s.path)
		}
		if _, err := s.stmts.ExecContext(ctx, "SAVEPOINT dsh_write"); err != nil {
			return s.storeError(err, "begin nested write")
		}
		if err := fn(s); err != nil {
			// The savepoint must be undone even when ctx is already done.
			undo := context.WithoutCancel(ctx)
			s.stmts.ExecContext(undo, "ROLLBACK TO dsh_write")
			s.stmts.ExecContext(undo, "RELEASE dsh_write")
			return err
		}
		if _, err := s.stmts.ExecContext(ctx, "RELEASE dsh_write"); err != nil {
			return s.storeError(err, "end nested write")
		}
		return nil
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.storeError(err, "begin write")
	}
	view := (&Store{db: s.db, path: s.path, tx: tx, txWritable: true, stmts: newStmtCache(tx), clock: s.clock}).bind()
	if err := fn(view); err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return s.storeError(err, "commit")
	}
	return nil
}

// View implements backend.Transactor: view with the view as a backend.Store.
func (s *Store) View(ctx context.Context, fn func(view backend.Store) error) error {
	return s.view(ctx, func(view *Store) error { return fn(view) })
}

// Update implements backend.Transactor: update with the view as a backend.Store.
func (s *Store) Update(ctx context.Context, fn func(tx backend.Store) error) error {
	return s.update(ctx, func(tx *Store) error { return fn(tx) })
}

// Now is the store's clock (Options.Clock), which judges leases.
func (s *Store) Now(ctx context.Context) (time.Time, error) {
	if err := ctx.Err(); err != nil {
		return time.Time{}, err
	}
	return s.nowTime(), nil
}

func (s *Store) nowTime() time.Time {
	if s.clock == nil {
		return time.Now()
	}
	return s.clock()
}

// now is the store's clock in epoch milliseconds.
func (s *Store) now() int64 { return s.nowTime().UnixMilli() }

// WithClock returns a handle on the same open store (same connections,
// same transaction when s is a view) whose clock is now: a test's way to
// act as a process whose leases are judged at another time. Close only the
// original.
func (s *Store) WithClock(now func() time.Time) *Store {
	c := *s
	c.clock = now
	return c.bind()
}

// write runs fn atomically on the transaction Update provides.
func (s *Store) write(ctx context.Context, fn func(q Querier) error) error {
	return s.update(ctx, func(view *Store) error { return fn(view.stmts) })
}

// read runs fn on one consistent snapshot: the view's transaction, or a new
// deferred read transaction.
func (s *Store) read(ctx context.Context, fn func(q Querier) error) error {
	return s.view(ctx, func(view *Store) error { return fn(view.tx) })
}

// storeError classifies a SQLite failure as STORE_UNAVAILABLE, leaving
// cancellation and already-coded errors as they are.
func (s *Store) storeError(err error, what string) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if dsherr.CodeOf(err) != "" {
		return err
	}
	return dsherr.Wrap(dsherr.StoreUnavailable, err, "%s (%s)", what, s.path)
}
