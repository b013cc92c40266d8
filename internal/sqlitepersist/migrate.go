package sqlitepersist

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"time"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/jsjson"
	"github.com/dsh-project/dsh/internal/sqliteread"
	"github.com/dsh-project/dsh/migrations"
)

// ApplicationID marks a SQLite file as a dsh store (ASCII "DSH1"). DSH's own
// schema-17 store uses "DSHP", so neither program mistakes the other's file
// for its own.
const ApplicationID = 0x44534831

// dshStoreApplicationID marks DSH's own schema-17 session store ("DSHP"),
// which dsh reads as a source (dshformat), never as its database.
const dshStoreApplicationID = 0x44534850

type migration = migrations.Migration

// loadMigrations reads the embedded migration files (migrations.Load).
func loadMigrations(fsys fs.FS) ([]migration, error) { return migrations.Load(fsys) }

// LatestSchemaVersion is the schema version this binary migrates to.
func LatestSchemaVersion() (int, error) {
	ms, err := loadMigrations(migrations.FS)
	if err != nil {
		return 0, err
	}
	return len(ms), nil
}

// fileIdentity is what a database file says about itself.
type fileIdentity struct {
	applicationID int64
	userVersion   int
	// recorded is the highest version in schema_migrations (0 without the
	// table): a file whose rows run ahead of user_version was migrated by
	// something else than this dsh, or by a newer one.
	recorded int
	objects  int // schema objects not created by SQLite itself
}

// readIdentity reads the identity in one read transaction. Its parts must
// come from one snapshot: read one by one, a first user migrating the file
// meanwhile shows tables without the application id that the same commit
// set, and a second first user would refuse the file as foreign.
func readIdentity(ctx context.Context, db *sql.DB) (fileIdentity, error) {
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fileIdentity{}, err
	}
	defer tx.Rollback()
	return readIdentityIn(ctx, tx)
}

// readIdentityIn reads the identity through q, which must read one
// snapshot (a transaction).
func readIdentityIn(ctx context.Context, q Querier) (fileIdentity, error) {
	var id fileIdentity
	if err := q.QueryRowContext(ctx, "PRAGMA application_id").Scan(&id.applicationID); err != nil {
		return id, err
	}
	if err := q.QueryRowContext(ctx, "PRAGMA user_version").Scan(&id.userVersion); err != nil {
		return id, err
	}
	if err := q.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema WHERE name NOT GLOB 'sqlite_*'").Scan(&id.objects); err != nil {
		return id, err
	}
	var tables int
	if err := q.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'schema_migrations'").Scan(&tables); err != nil || tables == 0 {
		return id, err
	}
	var recorded sql.NullInt64
	if err := q.QueryRowContext(ctx, "SELECT max(version) FROM schema_migrations").Scan(&recorded); err != nil {
		return id, err
	}
	id.recorded = int(recorded.Int64)
	return id, nil
}

// check refuses a file dsh must not touch: another application's database,
// or one migrated by a newer dsh.
func (id fileIdentity) check(path string, latest int) error {
	switch {
	case id.applicationID == dshStoreApplicationID:
		return &dsherr.Error{Code: dsherr.StoreUnavailable, Err: backend.ErrForeignDatabase,
			Msg: fmt.Sprintf("%s is DSH's session store, not a dsh database: read it in place with --source dsh-sqlite:%s or copy it in with dsh import dsh-sqlite:%s", path, path, path)}
	case id.applicationID != 0 && id.applicationID != ApplicationID:
		return &dsherr.Error{Code: dsherr.StoreUnavailable, Err: backend.ErrForeignDatabase,
			Msg: fmt.Sprintf("%s is not a dsh database (application_id %#x)", path, id.applicationID)}
	case id.applicationID == 0 && (id.userVersion != 0 || id.objects > 0):
		return &dsherr.Error{Code: dsherr.StoreUnavailable, Err: backend.ErrForeignDatabase,
			Msg: fmt.Sprintf("%s is not a dsh database (it has tables but no dsh application id)", path)}
	case id.userVersion > latest:
		return &dsherr.Error{Code: dsherr.StoreUnavailable, Err: backend.ErrSchemaTooNew,
			Msg: fmt.Sprintf("%s has schema version %d, newer than this dsh supports (%d); upgrade dsh", path, id.userVersion, latest)}
	case id.recorded > id.userVersion:
		// Every dsh records a migration in the transaction that sets
		// user_version to it, so the two never disagree in a file only dsh
		// wrote: a newer dsh (or another tool) applied migration N.
		return &dsherr.Error{Code: dsherr.StoreUnavailable, Err: backend.ErrSchemaTooNew,
			Msg: fmt.Sprintf("%s records schema migration %d in schema_migrations but has schema version %d (this dsh supports %d): "+
				"it was changed by a newer dsh or another tool; upgrade dsh", path, id.recorded, id.userVersion, latest)}
	}
	return nil
}

// migrate applies every pending migration, each in its own BEGIN IMMEDIATE
// transaction that also records it in PRAGMA user_version and in
// schema_migrations; a concurrent migrator is detected by re-reading the
// version inside the transaction.
func migrate(ctx context.Context, db *sql.DB, path string, progress func(name string, done, total int)) error {
	ms, err := loadMigrations(migrations.FS)
	if err != nil {
		return dsherr.Wrap(dsherr.Internal, err, "embedded migrations")
	}
	id, err := readIdentity(ctx, db)
	if err != nil {
		return dsherr.Wrap(dsherr.StoreUnavailable, err, "read schema of %s", path)
	}
	if err := id.check(path, len(ms)); err != nil {
		return err
	}
	for _, m := range ms {
		if m.Version <= id.userVersion {
			continue
		}
		if err := applyMigration(ctx, db, path, m, len(ms), progress); err != nil {
			return err
		}
	}
	return nil
}

func applyMigration(ctx context.Context, db *sql.DB, path string, m migration, latest int, progress func(name string, done, total int)) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return dsherr.Wrap(dsherr.StoreUnavailable, err, "migrate %s", path)
	}
	defer tx.Rollback()
	id, err := readIdentityIn(ctx, tx)
	if err != nil {
		return dsherr.Wrap(dsherr.StoreUnavailable, err, "migrate %s", path)
	}
	if err := id.check(path, latest); err != nil {
		return err
	}
	if id.userVersion >= m.Version {
		return nil
	}
	stmts := []string{
		m.SQL,
		`CREATE TABLE IF NOT EXISTS schema_migrations (
			version    INTEGER PRIMARY KEY,
			name       TEXT NOT NULL,
			applied_at INTEGER NOT NULL
		) STRICT`,
		fmt.Sprintf("PRAGMA user_version = %d", m.Version),
		fmt.Sprintf("PRAGMA application_id = %d", ApplicationID),
	}
	for i, stmt := range stmts {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return dsherr.Wrap(dsherr.StoreUnavailable, err, "migrate %s to version %d (%s)", path, m.Version, m.Name)
		}
		if i == 0 && m.Backfill != "" {
			if err := backfill(ctx, tx, m, progress); err != nil {
				return dsherr.Wrap(dsherr.StoreUnavailable, err, "migrate %s to version %d (%s): back-fill", path, m.Version, m.Name)
			}
		}
	}
	if _, err := tx.ExecContext(ctx,
		"INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
		m.Version, m.Name, time.Now().UnixMilli()); err != nil {
		return dsherr.Wrap(dsherr.StoreUnavailable, err, "record migration %d of %s", m.Version, path)
	}
	if err := tx.Commit(); err != nil {
		return dsherr.Wrap(dsherr.StoreUnavailable, err, "commit migration %d of %s", m.Version, path)
	}
	return nil
}

// checkReadableSchema accepts a dsh store that has at least the session
// tables and no schema newer than this binary; a read-only open cannot
// migrate, so an uninitialized file is reported as no database at all.
func checkReadableSchema(ctx context.Context, db *sql.DB, path string) error {
	latest, err := LatestSchemaVersion()
	if err != nil {
		return dsherr.Wrap(dsherr.Internal, err, "embedded migrations")
	}
	id, err := readIdentity(ctx, db)
	if sqliteread.HotJournal(err) {
		return dsherr.Wrap(dsherr.StoreUnavailable, err,
			"%s has a hot rollback journal (%s-journal): a writer crashed mid-transaction after the file was switched out of WAL mode, "+
				"and a read-only command cannot roll it back; run dsh init to recover it", path, path)
	}
	if err != nil {
		return dsherr.Wrap(dsherr.StoreUnavailable, err, "read schema of %s", path)
	}
	if err := id.check(path, latest); err != nil {
		return err
	}
	switch {
	case id.userVersion == 0:
		return &dsherr.Error{Code: dsherr.StoreUnavailable, Err: backend.ErrNoDatabase,
			Msg: fmt.Sprintf("%s is not initialized (run dsh init)", path)}
	case id.userVersion < latest:
		// The commands read tables later migrations add: say so rather
		// than fail on the first missing one.
		return &dsherr.Error{Code: dsherr.StoreUnavailable, Err: backend.ErrSchemaTooOld,
			Msg: fmt.Sprintf("%s has dsh schema version %d; this dsh reads version %d: run dsh init to migrate it", path, id.userVersion, latest)}
	}
	return nil
}

// backfillChunk is how many sessions one round of a back-fill covers.
const backfillChunk = 256

// backfill runs m's back-fill over every stored session, a chunk of ids at
// a time in the temporary table dsh_backfill_ids, telling progress after
// each chunk.
func backfill(ctx context.Context, tx *sql.Tx, m migration, progress func(name string, done, total int)) error {
	var ids []string
	rows, err := tx.QueryContext(ctx, "SELECT id FROM sessions ORDER BY id")
	if err != nil {
		return err
	}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return err
		}
		ids = append(ids, id)
	}
	if err := rows.Close(); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, "CREATE TEMP TABLE dsh_backfill_ids (id TEXT PRIMARY KEY)"); err != nil {
		return err
	}
	if progress != nil {
		progress(m.Name, 0, len(ids))
	}
	for start := 0; start < len(ids); start += backfillChunk {
		chunk := ids[start:min(start+backfillChunk, len(ids))]
		if _, err := tx.ExecContext(ctx, "DELETE FROM dsh_backfill_ids"); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO dsh_backfill_ids (id) SELECT value FROM json_each(?)", jsjson.StringArray(chunk)); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, m.Backfill); err != nil {
			return err
		}
		if progress != nil {
			progress(m.Name, start+len(chunk), len(ids))
		}
	}
	_, err = tx.ExecContext(ctx, "DROP TABLE temp.dsh_backfill_ids")
	return err
}
