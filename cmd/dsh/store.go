package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/location"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/sqlitepersist"
)

// openStore opens the configured database for writing, creating (SQLite)
// and migrating it on first use. Only commands that write call it.
func (a *app) openStore(ctx context.Context) (location.Store, error) {
	cfg, err := a.config()
	if err != nil {
		return nil, err
	}
	return location.OpenStore(ctx, cfg.DB, a.locationOptions(cfg))
}

// openStoreReadOnly opens the configured database for reading. It never
// creates, migrates or modifies it (PostgreSQL: read-only transactions, so
// a role that may only SELECT is enough); a missing database is an error.
func (a *app) openStoreReadOnly(ctx context.Context) (location.Store, error) {
	cfg, err := a.config()
	if err != nil {
		return nil, err
	}
	return location.OpenStoreReadOnly(ctx, cfg.DB, a.locationOptions(cfg))
}

// locationOptions are the settings opening a corpus takes from the
// configuration; the read commands add their --source flags'.
func (a *app) locationOptions(cfg *config) location.Options {
	return location.Options{
		SQLite:     sqlitepersist.Options{BusyTimeout: cfg.BusyTimeout, BusyTimeoutSet: true},
		Profile:    cfg.DSHCompat.Or(),
		Warn:       a.warn,
		Enumerated: sourceEnumerated,
		// A back-fill over a large store takes a while: a bar, when
		// stderr is a terminal (or --progress forces it).
		MigrationProgress: a.migrationProgress(),
	}
}

// closeStore closes s and keeps the first error: a failed close after a
// successful write may mean the write is not durable.
func closeStore(s location.Store, err *error) {
	if cerr := s.Close(); cerr != nil && *err == nil {
		*err = fmt.Errorf("close database: %w", cerr)
	}
}

// checkSessionID is session.CheckID with what the id was given as (a flag,
// a command) named first.
func checkSessionID(what, id string) error {
	if err := session.CheckID(id); err != nil {
		return dsherr.Wrap(dsherr.InvalidInput, err, "%s", what)
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
