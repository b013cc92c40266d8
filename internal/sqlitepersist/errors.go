package sqlitepersist

import (
	"errors"

	"github.com/dsh-project/dsh/internal/backend"
)

// Sentinel errors, matched with errors.Is. The errors the store returns wrap
// them in a *dsherr.Error carrying the code the CLI maps to an exit status.
var (
	// ErrNoDatabase (a read-only open found no database file, or an empty
	// one that was never initialized), ErrNotFound, ErrDuplicate and
	// ErrCorrupt are the backend contract's.
	ErrNoDatabase = backend.ErrNoDatabase
	ErrNotFound   = backend.ErrNotFound
	ErrDuplicate  = backend.ErrDuplicate
	ErrCorrupt    = backend.ErrCorrupt
	// ErrSchemaTooNew: the file was migrated by a newer dsh.
	ErrSchemaTooNew = errors.New("database schema is newer than this dsh")
	// ErrSchemaTooOld: a read-only open found a schema that dsh init has
	// not yet migrated.
	ErrSchemaTooOld = errors.New("database schema is older than this dsh")
	// ErrForeignDatabase: the file is a SQLite database that dsh did not create.
	ErrForeignDatabase = errors.New("not a dsh database")
)

// The store's values are the backend contract's.
type (
	StaleWriterError = backend.StaleWriterError
	CorruptRowError  = backend.CorruptRowError
	Inspection       = backend.Inspection
	TornTail         = backend.TornTail
	DamagedLog       = backend.DamagedLog
	SeqGap           = backend.SeqGap
	AuditRead        = backend.AuditRead
	ImportResult     = backend.ImportResult
	LeaseHolder      = backend.LeaseHolder
	LiveSnapshot     = backend.LiveSnapshot
	Lease            = backend.Lease
	LeaseHeldError   = backend.LeaseHeldError
)
