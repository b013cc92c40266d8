package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/sqlitepersist"
)

// openStore opens the configured database for writing, creating and
// migrating it on first use. Only commands that write call it.
func (a *app) openStore(ctx context.Context) (*sqlitepersist.Store, error) {
	cfg, err := a.config()
	if err != nil {
		return nil, err
	}
	return sqlitepersist.Open(ctx, cfg.DB, sqlitepersist.Options{BusyTimeout: cfg.BusyTimeout, BusyTimeoutSet: true})
}

// openStoreReadOnly opens the configured database for reading. It never
// creates, migrates or modifies the file; a missing database is an error.
func (a *app) openStoreReadOnly(ctx context.Context) (*sqlitepersist.Store, error) {
	cfg, err := a.config()
	if err != nil {
		return nil, err
	}
	return sqlitepersist.OpenReadOnly(ctx, cfg.DB, sqlitepersist.Options{BusyTimeout: cfg.BusyTimeout, BusyTimeoutSet: true})
}

// closeStore closes s and keeps the first error: a failed close after a
// successful write may mean the write is not durable.
func closeStore(s *sqlitepersist.Store, err *error) {
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
	if errors.Is(err, sqlitepersist.ErrNotFound) {
		return &dsherr.Error{Code: dsherr.NotFound, Msg: fmt.Sprintf("no session with id %q", id), Err: err}
	}
	return err
}
