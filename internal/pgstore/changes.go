package pgstore

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/dsherr"
)

// changeChannel is the channel migration 0011's triggers notify; the
// payload is the schema of the table written.
const changeChannel = "dsh_changes"

// changeMigration names the migration that creates those triggers.
const changeMigration = "change_notify"

var _ backend.ChangeNotifier = (*Store)(nil)

// WatchChanges implements backend.ChangeNotifier with LISTEN on a
// connection of its own, outside the pool: migration 0011's statement-level
// triggers NOTIFY on every write to the tables a listing reads, delivered
// when the writing transaction commits. A read-only store may LISTEN. A
// catalog not yet migrated to 0011 has no triggers, so the watch is refused
// rather than left waiting for notifications that never come.
func (s *Store) WatchChanges(ctx context.Context, notify func()) error {
	if s.tx != nil {
		return errors.New("pgstore: WatchChanges called on a transaction view")
	}
	if err := s.requireMigration(ctx, changeMigration, "watch", "change notifications"); err != nil {
		return err
	}
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return connectError(err, s.name, s.secrets)
	}
	// Closing the connection is also what ends a receive blocked in
	// WaitForNotification once ctx ends.
	defer conn.Close(context.Background())
	var schema string
	if err := conn.QueryRow(ctx, "SELECT current_schema()").Scan(&schema); err != nil {
		return s.watchError(ctx, err)
	}
	if _, err := conn.Exec(ctx, "LISTEN "+changeChannel); err != nil {
		return s.watchError(ctx, err)
	}

	// The receiver marks pending and goes on reading while notify runs,
	// so notifications arriving meanwhile fold into the next call.
	pending := make(chan struct{}, 1)
	lost := make(chan error, 1)
	go func() {
		for {
			n, err := conn.WaitForNotification(ctx)
			if err != nil {
				lost <- err
				return
			}
			if n.Payload != schema {
				continue
			}
			select {
			case pending <- struct{}{}:
			default:
			}
		}
	}()
	notify()
	for {
		select {
		case <-pending:
			notify()
		case err := <-lost:
			return s.watchError(ctx, err)
		}
	}
}

// requireMigration refuses a catalog (opened read-only, which a schema
// older than this binary's may be) whose schema predates the migration
// named name: what (e.g. "change notifications") needs its tables or
// triggers, which doing (e.g. "watch") would otherwise miss or fail on.
func (s *Store) requireMigration(ctx context.Context, name, doing, what string) error {
	ms, err := loadMigrations()
	if err != nil {
		return dsherr.Wrap(dsherr.Internal, err, "embedded migrations")
	}
	need := 0
	for _, m := range ms {
		if m.Name == name {
			need = m.Version
		}
	}
	if need == 0 {
		return dsherr.New(dsherr.Internal, "no embedded migration %s", name)
	}
	have, err := s.SchemaVersion(ctx)
	if err != nil {
		return err
	}
	if have < need {
		return dsherr.New(dsherr.StoreUnavailable,
			"cannot %s %s: its schema version is %d and %s need version %d; run dsh init to migrate it", doing, s.name, have, what, need)
	}
	return nil
}

func (s *Store) watchError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return s.storeError(err, "watch for changes")
}
