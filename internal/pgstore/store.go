// Package pgstore is dsh's PostgreSQL session store: the same session
// headers, append-only DSH event logs, leases and projection checkpoints as
// the embedded SQLite store, in a database that many machines share. It is
// the one package that speaks PostgreSQL's SQL dialect.
//
// What SQLite gets from having a single writer is explicit here: an append
// locks its session's row (SELECT … FOR UPDATE) before it compares the
// stored next seq with the writer's, a lease is a compare-and-set judged by
// the server's clock, and read-only stores run every query in a read-only
// transaction, so they work with a role that may only SELECT.
package pgstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/sqlstore"
)

// DefaultConnectTimeout bounds connecting to the server when the URL sets no
// connect_timeout: an unreachable host fails the command instead of hanging.
const DefaultConnectTimeout = 10 * time.Second

// querier is what both the pool and a transaction offer.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error)
}

// Store is an open PostgreSQL session store. The Store returned by Open or
// OpenReadOnly is safe for concurrent use; the views handed to View
// and Update callbacks are bound to one transaction and valid only inside
// the callback.
type Store struct {
	// Core holds the methods whose SQL both stores share.
	sqlstore.Core

	pool *pgxpool.Pool
	// name is the database URL with its password redacted: what messages say.
	name     string
	secrets  []string
	readOnly bool

	// tx is set on a view: every method of the view runs inside it.
	tx         pgx.Tx
	txWritable bool
	// pipe is set on a pipelined write view (UpdatePipelined): the
	// view's statements go through it.
	pipe *pipeline
	// savepoints numbers nested Update calls on a view.
	savepoints int
}

// Open connects to the database at dsn (a postgres:// URL or a libpq
// keyword/value string; libpq's
// environment variables fill in what it leaves out) for reading and writing
// and applies pending migrations under an advisory lock, so several
// machines may run it at once.
func Open(ctx context.Context, dsn string) (*Store, error) {
	return OpenWithProgress(ctx, dsn, nil)
}

// OpenWithProgress is Open telling progress how far a migration's
// back-fill has got (migrations.Migration.Backfill): done of total
// sessions of migration name, from 0 to total.
func OpenWithProgress(ctx context.Context, dsn string, progress func(name string, done, total int)) (*Store, error) {
	s, err := connect(ctx, dsn, false)
	if err != nil {
		return nil, err
	}
	if err := s.migrate(ctx, progress); err != nil {
		s.pool.Close()
		return nil, err
	}
	return s, nil
}

// OpenReadOnly connects for reading only: every connection defaults to
// read-only transactions, and nothing is created or migrated. A database
// dsh never initialized is an error wrapping ErrNoDatabase.
func OpenReadOnly(ctx context.Context, dsn string) (*Store, error) {
	s, err := connect(ctx, dsn, true)
	if err != nil {
		return nil, err
	}
	if err := s.checkReadableSchema(ctx); err != nil {
		s.pool.Close()
		return nil, err
	}
	return s, nil
}

func connect(ctx context.Context, dsn string, readOnly bool) (*Store, error) {
	name := Redact(dsn)
	secrets := urlSecrets(dsn)
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, dsherr.New(dsherr.InvalidInput, "invalid PostgreSQL connection string %s: %s", name, scrub(err.Error(), secrets))
	}
	if p := cfg.ConnConfig.Password; p != "" {
		secrets = append(secrets, p) // PGPASSWORD or a pgpass entry
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = DefaultConnectTimeout
	}
	if _, set := cfg.ConnConfig.RuntimeParams["application_name"]; !set {
		cfg.ConnConfig.RuntimeParams["application_name"] = "dsh"
	}
	cfg.ConnConfig.Tracer = tracer{}
	if readOnly {
		// Any statement that would write fails in the server, whatever
		// the role may do.
		cfg.ConnConfig.RuntimeParams["default_transaction_read_only"] = "on"
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, connectError(err, name, secrets)
	}
	s := (&Store{pool: pool, name: name, secrets: secrets, readOnly: readOnly}).bind()
	var encoding string
	if err := pool.QueryRow(ctx, "SHOW server_encoding").Scan(&encoding); err != nil {
		pool.Close()
		return nil, connectError(err, name, secrets)
	}
	if encoding != "UTF8" {
		pool.Close()
		return nil, dsherr.New(dsherr.StoreUnavailable,
			"%s: server encoding is %s; dsh needs a UTF8 database (CREATE DATABASE … ENCODING 'UTF8')", name, encoding)
	}
	return s, nil
}

// urlSecrets returns the password written in dsn, if any, so that it can be
// scrubbed from messages that quote the URL.
func urlSecrets(dsn string) []string {
	if !IsURL(dsn) {
		return keywordSecrets(dsn)
	}
	var out []string
	if u, err := url.Parse(dsn); err == nil {
		if p, ok := u.User.Password(); ok && p != "" {
			out = append(out, p)
		}
		for _, key := range []string{"password", "sslpassword"} {
			if p := u.Query().Get(key); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

// scrub removes every secret from msg and folds it onto one line.
func scrub(msg string, secrets []string) string {
	for _, s := range secrets {
		msg = strings.ReplaceAll(msg, s, redactedPassword)
	}
	return strings.Join(strings.Fields(msg), " ")
}

// connectError turns a failure to reach or enter the database into one
// line that names the problem, with code STORE_UNAVAILABLE.
func connectError(err error, name string, secrets []string) error {
	if errors.Is(err, context.Canceled) {
		return err
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case pgErr.Code == "28P01" || pgErr.Code == "28000":
			return &dsherr.Error{Code: dsherr.StoreUnavailable, Err: backend.ErrAuthentication,
				Msg: fmt.Sprintf("%s: authentication failed: %s", name, scrub(pgErr.Message, secrets))}
		case pgErr.Code == "3D000":
			return &dsherr.Error{Code: dsherr.StoreUnavailable, Err: backend.ErrNoDatabase,
				Msg: fmt.Sprintf("%s: %s (create it, e.g. createdb, then run dsh init)", name, scrub(pgErr.Message, secrets))}
		}
		return &dsherr.Error{Code: dsherr.StoreUnavailable, Err: err,
			Msg: fmt.Sprintf("%s: %s (SQLSTATE %s)", name, scrub(pgErr.Message, secrets), pgErr.Code)}
	}
	var netErr net.Error
	var connectErr *pgconn.ConnectError
	if errors.As(err, &netErr) || errors.As(err, &connectErr) || errors.Is(err, context.DeadlineExceeded) {
		return &dsherr.Error{Code: dsherr.StoreUnavailable, Err: errors.Join(backend.ErrUnreachable, err),
			Msg: fmt.Sprintf("%s: cannot connect to the server: %s", name, scrub(rootCause(err), secrets))}
	}
	return &dsherr.Error{Code: dsherr.StoreUnavailable, Err: err,
		Msg: fmt.Sprintf("%s: %s", name, scrub(err.Error(), secrets))}
}

// rootCause is the innermost message of a connection failure (pgconn
// prefixes it with the user and database and, per host tried, the
// address).
func rootCause(err error) string {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err.Error()
		}
		err = next
	}
}

// Close closes the store's connections. Calling it on a transaction view
// is an error.
func (s *Store) Close() error {
	if s.tx != nil {
		return errors.New("pgstore: Close called on a transaction view")
	}
	s.pool.Close()
	return nil
}

// Path is the database URL with any password redacted: what dsh prints
// where the SQLite store prints its file's path.
func (s *Store) Path() string { return s.name }

// ReadOnly reports whether the store was opened with OpenReadOnly.
func (s *Store) ReadOnly() bool { return s.readOnly }

// q is the handle queries run on: the view's pipeline or transaction, or
// the pool.
func (s *Store) q() querier {
	if s.pipe != nil {
		return s.pipe
	}
	if s.tx != nil {
		return s.tx
	}
	return s.pool
}

// view runs fn with a view whose methods all read one consistent
// snapshot (a REPEATABLE READ, READ ONLY transaction). Inside a view it
// reuses the view's transaction.
func (s *Store) view(ctx context.Context, fn func(view *Store) error) error {
	if s.tx != nil {
		return fn(s)
	}
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return s.storeError(err, "begin read")
	}
	view := (&Store{pool: s.pool, name: s.name, secrets: s.secrets, readOnly: s.readOnly, tx: tx}).bind()
	if err := fn(view); err != nil {
		tx.Rollback(context.WithoutCancel(ctx))
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return s.storeError(err, "end read")
	}
	return nil
}

// update runs fn with a view bound to one READ COMMITTED transaction and
// commits when fn returns nil; any error rolls everything back. The methods
// of the view lock the rows they decide on (an append locks its session's
// row), so concurrent writers from other machines serialize where they
// conflict. Inside an Update view it nests through a savepoint.
func (s *Store) update(ctx context.Context, fn func(tx *Store) error) error {
	return s.write(ctx, false, fn)
}

// write is update, pipelined (see pipeline) when pipelined is set and no
// transaction is open yet; a nested write keeps its view's way.
func (s *Store) write(ctx context.Context, pipelined bool, fn func(tx *Store) error) error {
	if s.readOnly {
		return dsherr.New(dsherr.StoreUnavailable, "store %s is open read-only", s.name)
	}
	if s.tx != nil {
		if !s.txWritable {
			return dsherr.New(dsherr.Internal, "write attempted inside a read snapshot of %s", s.name)
		}
		s.savepoints++
		sp := fmt.Sprintf("dsh_write_%d", s.savepoints)
		defer func() { s.savepoints-- }()
		if err := execLater(ctx, s.q(), nil, "SAVEPOINT "+sp); err != nil {
			return s.storeError(err, "begin nested write")
		}
		if err := fn(s); err != nil {
			if s.pipe != nil && s.pipe.failed != nil {
				// The server skipped what followed the failure: only
				// rolling the whole transaction back is sound.
				return err
			}
			// The savepoint must be undone even when ctx is already done.
			undo := context.WithoutCancel(ctx)
			execLater(undo, s.q(), nil, "ROLLBACK TO SAVEPOINT "+sp)
			execLater(undo, s.q(), nil, "RELEASE SAVEPOINT "+sp)
			return err
		}
		if err := execLater(ctx, s.q(), nil, "RELEASE SAVEPOINT "+sp); err != nil {
			return s.storeError(err, "end nested write")
		}
		return nil
	}
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted, AccessMode: pgx.ReadWrite})
	if err != nil {
		return s.storeError(err, "begin write")
	}
	view := (&Store{pool: s.pool, name: s.name, secrets: s.secrets, tx: tx, txWritable: true}).bind()
	if pipelined {
		view.pipe = &pipeline{tx: tx}
	}
	if err := fn(view); err != nil {
		tx.Rollback(context.WithoutCancel(ctx))
		return err
	}
	if view.pipe != nil {
		if err := view.pipe.flush(ctx); err != nil {
			tx.Rollback(context.WithoutCancel(ctx))
			return s.storeError(err, "commit")
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return s.storeError(err, "commit")
	}
	return nil
}

// storeError classifies a database failure as STORE_UNAVAILABLE, leaving
// cancellation and already-coded errors as they are. A lost connection is
// reported like an unreachable server: the transaction it carried was
// rolled back by the server, so nothing of it was acknowledged.
func (s *Store) storeError(err error, what string) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if dsherr.CodeOf(err) != "" {
		return err
	}
	return &dsherr.Error{Code: dsherr.StoreUnavailable, Err: err,
		Msg: fmt.Sprintf("%s (%s): %s", what, s.name, scrub(err.Error(), s.secrets))}
}

// The store is a complete backend, and keeps what an import refused.
var (
	_ backend.Backend         = (*Store)(nil)
	_ backend.RefusalRecorder = (*Store)(nil)
	_ backend.RefusalReader   = (*Store)(nil)
)

// View implements backend.Transactor: view with the view as a backend.Store.
func (s *Store) View(ctx context.Context, fn func(view backend.Store) error) error {
	return s.view(ctx, func(view *Store) error { return fn(view) })
}

// Update implements backend.Transactor: update with the view as a backend.Store.
func (s *Store) Update(ctx context.Context, fn func(tx backend.Store) error) error {
	return s.update(ctx, func(tx *Store) error { return fn(tx) })
}
