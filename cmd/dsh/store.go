package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/pgstore"
	"github.com/dsh-project/dsh/internal/sqlitepersist"
)

// catalog is an open dsh database on either backend: the embedded SQLite
// file (the default) or a PostgreSQL catalog (a postgres:// URL or a libpq
// keyword/value string as --db).
// Commands see the backend contract and nothing of the dialect.
type catalog interface {
	backend.Backend
	// Path names the database in output: the SQLite file's absolute path,
	// or the URL with its password redacted.
	Path() string
	SchemaVersion(ctx context.Context) (int, error)
}

// openStore opens the configured database for writing, creating (SQLite)
// and migrating it on first use. Only commands that write call it.
func (a *app) openStore(ctx context.Context) (catalog, error) {
	cfg, err := a.config()
	if err != nil {
		return nil, err
	}
	if pgstore.IsConnString(cfg.DB) {
		return nilOnError(pgstore.Open(ctx, cfg.DB))
	}
	return nilOnError(sqlitepersist.Open(ctx, cfg.DB, sqlitepersist.Options{BusyTimeout: cfg.BusyTimeout, BusyTimeoutSet: true}))
}

// openStoreReadOnly opens the configured database for reading. It never
// creates, migrates or modifies it (PostgreSQL: read-only transactions, so
// a role that may only SELECT is enough); a missing database is an error.
func (a *app) openStoreReadOnly(ctx context.Context) (catalog, error) {
	cfg, err := a.config()
	if err != nil {
		return nil, err
	}
	return a.openReadOnlyAt(ctx, cfg.DB)
}

// openReadOnlyAt opens the dsh database db (a SQLite path or a PostgreSQL
// URL) as openStoreReadOnly opens the configured one: `import dsh:` reads
// its source this way.
func (a *app) openReadOnlyAt(ctx context.Context, db string) (catalog, error) {
	cfg, err := a.config()
	if err != nil {
		return nil, err
	}
	if pgstore.IsConnString(db) {
		return nilOnError(pgstore.OpenReadOnly(ctx, db))
	}
	return nilOnError(sqlitepersist.OpenReadOnly(ctx, db, sqlitepersist.Options{BusyTimeout: cfg.BusyTimeout, BusyTimeoutSet: true}))
}

// nilOnError keeps a failed open's nil pointer from becoming a non-nil
// catalog.
func nilOnError[S catalog](s S, err error) (catalog, error) {
	if err != nil {
		return nil, err
	}
	return s, nil
}

// closeStore closes s and keeps the first error: a failed close after a
// successful write may mean the write is not durable.
func closeStore(s catalog, err *error) {
	if cerr := s.Close(); cerr != nil && *err == nil {
		*err = fmt.Errorf("close database: %w", cerr)
	}
}

// checkSessionID accepts every id DSH accepts, any non-empty string (DSH
// wrote and listed a session named " zeta"), and refuses only what cannot be
// stored and passed on intact: bytes that are not UTF-8 (DSH's ids are
// Unicode text, and JSON cannot carry such bytes) and NUL (SQLite's text
// functions and C strings end there). Blanks and control characters are
// kept; every human output escapes them.
func checkSessionID(what, id string) error {
	switch {
	case id == "":
		return dsherr.New(dsherr.InvalidInput, "%s: empty session id", what)
	case !utf8.ValidString(id):
		return dsherr.New(dsherr.InvalidInput, "%s: session id %q is not valid UTF-8 (DSH ids are Unicode text)", what, id)
	case strings.ContainsRune(id, 0):
		return dsherr.New(dsherr.InvalidInput, "%s: session id %q contains NUL, which the store cannot keep intact", what, id)
	}
	return nil
}

// lookupError names the id when the store does not know it.
func lookupError(id string, err error) error {
	if errors.Is(err, backend.ErrNotFound) {
		return &dsherr.Error{Code: dsherr.NotFound, Msg: fmt.Sprintf("no session with id %q", id), Err: err}
	}
	return err
}
