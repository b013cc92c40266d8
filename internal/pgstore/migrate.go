package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/migrations"
)

// migrationLockKey is the pg_advisory_xact_lock key migrations hold (ASCII
// "DSH1", the SQLite store's application id): concurrent `dsh init` runs on
// several machines apply each migration once, one after the other.
const migrationLockKey = 0x44534831

// migrationsTable records the applied migrations. Its name is dsh's own, so
// that a schema another tool manages (many call theirs schema_migrations)
// is never mistaken for a dsh catalog.
const migrationsTable = "dsh_schema_migrations"

type migration = migrations.Migration

// loadMigrations reads the embedded PostgreSQL migration files
// (migrations.Load).
func loadMigrations() ([]migration, error) { return migrations.Load(migrations.PostgresFS) }

// LatestSchemaVersion is the schema version this binary migrates to.
func LatestSchemaVersion() (int, error) {
	ms, err := loadMigrations()
	if err != nil {
		return 0, err
	}
	return len(ms), nil
}

// identity is what the database's current schema says about itself.
type identity struct {
	recorded bool // the migrations table exists
	version  int  // highest applied migration
	tables   int  // tables in the schema, dsh's included
	schema   string
}

func readIdentity(ctx context.Context, q querier) (identity, error) {
	var id identity
	var schema *string
	err := q.QueryRow(ctx, `SELECT current_schema(),
		to_regclass('`+migrationsTable+`') IS NOT NULL,
		(SELECT count(*) FROM pg_catalog.pg_tables WHERE schemaname = current_schema())`).
		Scan(&schema, &id.recorded, &id.tables)
	if err != nil {
		return id, err
	}
	if schema == nil {
		return id, errors.New("no schema selected (the search_path names no existing schema)")
	}
	id.schema = *schema
	if id.recorded {
		err = q.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM "+migrationsTable).Scan(&id.version)
	}
	return id, err
}

// check refuses a schema dsh must not touch: another application's tables,
// or a catalog migrated by a newer dsh.
func (id identity) check(name string, latest int) error {
	switch {
	case !id.recorded && id.tables > 0:
		return &dsherr.Error{Code: dsherr.StoreUnavailable, Err: backend.ErrForeignDatabase,
			Msg: fmt.Sprintf("%s is not a dsh database (schema %s has tables but no %s)", name, id.schema, migrationsTable)}
	case id.version > latest:
		return &dsherr.Error{Code: dsherr.StoreUnavailable, Err: backend.ErrSchemaTooNew,
			Msg: fmt.Sprintf("%s has schema version %d, newer than this dsh supports (%d); upgrade dsh", name, id.version, latest)}
	}
	return nil
}

// migrate applies every pending migration in one transaction that holds
// the migration advisory lock: a second migrator waits, then finds the
// work done. A catalog already at the latest version takes no lock.
func (s *Store) migrate(ctx context.Context, progress func(name string, done, total int)) error {
	ms, err := loadMigrations()
	if err != nil {
		return dsherr.Wrap(dsherr.Internal, err, "embedded migrations")
	}
	id, err := readIdentity(ctx, s.pool)
	if err != nil {
		return s.storeError(err, "read schema")
	}
	if err := id.check(s.name, len(ms)); err != nil {
		return err
	}
	if id.version == len(ms) {
		return nil
	}
	err = pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{}, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(migrationLockKey)); err != nil {
			return err
		}
		id, err := readIdentity(ctx, tx)
		if err != nil {
			return err
		}
		if err := id.check(s.name, len(ms)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+migrationsTable+` (
			version    bigint PRIMARY KEY,
			name       text NOT NULL,
			applied_at bigint NOT NULL
		)`); err != nil {
			return err
		}
		for _, m := range ms[id.version:] {
			// No arguments: pgx sends the file with the simple protocol,
			// which runs its several statements in order.
			if _, err := tx.Exec(ctx, m.SQL); err != nil {
				return fmt.Errorf("migrate to version %d (%s): %w", m.Version, m.Name, err)
			}
			if m.Backfill != "" {
				if err := backfill(ctx, tx, m, progress); err != nil {
					return fmt.Errorf("migrate to version %d (%s): back-fill: %w", m.Version, m.Name, err)
				}
			}
			if _, err := tx.Exec(ctx, `INSERT INTO `+migrationsTable+` (version, name, applied_at)
				VALUES ($1, $2, (extract(epoch FROM now()) * 1000)::bigint)`, m.Version, m.Name); err != nil {
				return fmt.Errorf("record migration %d: %w", m.Version, err)
			}
		}
		return nil
	})
	if err != nil {
		return s.storeError(err, "migrate")
	}
	return nil
}

// checkReadableSchema accepts a dsh catalog that has at least the session
// tables and no schema newer than this binary; a read-only open cannot
// migrate, so an uninitialized database is reported as no catalog at all.
func (s *Store) checkReadableSchema(ctx context.Context) error {
	latest, err := LatestSchemaVersion()
	if err != nil {
		return dsherr.Wrap(dsherr.Internal, err, "embedded migrations")
	}
	id, err := readIdentity(ctx, s.pool)
	if err != nil {
		return s.storeError(err, "read schema")
	}
	if err := id.check(s.name, latest); err != nil {
		return err
	}
	if id.version == 0 {
		return &dsherr.Error{Code: dsherr.StoreUnavailable, Err: backend.ErrNoDatabase,
			Msg: fmt.Sprintf("%s is not initialized (run dsh init)", s.name)}
	}
	return nil
}

// SchemaVersion is the number of the last migration applied.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	if err := s.q().QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM "+migrationsTable).Scan(&v); err != nil {
		return 0, s.storeError(err, "read schema version")
	}
	return v, nil
}

// backfillChunk is how many sessions one round of a back-fill covers.
const backfillChunk = 256

// backfill runs m's back-fill over every stored session, a chunk of ids at
// a time in the temporary table dsh_backfill_ids, telling progress after
// each chunk.
func backfill(ctx context.Context, tx pgx.Tx, m migration, progress func(name string, done, total int)) error {
	rows, err := tx.Query(ctx, "SELECT id FROM sessions ORDER BY id")
	if err != nil {
		return err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, "CREATE TEMP TABLE dsh_backfill_ids (id text COLLATE \"C\" PRIMARY KEY) ON COMMIT DROP"); err != nil {
		return err
	}
	if progress != nil {
		progress(m.Name, 0, len(ids))
	}
	for start := 0; start < len(ids); start += backfillChunk {
		chunk := ids[start:min(start+backfillChunk, len(ids))]
		if _, err := tx.Exec(ctx, "DELETE FROM dsh_backfill_ids"); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "INSERT INTO dsh_backfill_ids (id) SELECT unnest($1::text[])", chunk); err != nil {
			return err
		}
		// No arguments: the simple protocol runs the statements in order.
		if _, err := tx.Exec(ctx, m.Backfill); err != nil {
			return err
		}
		if progress != nil {
			progress(m.Name, start+len(chunk), len(ids))
		}
	}
	return nil
}
