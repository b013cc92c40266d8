package sqlitepersist

import (
	"errors"
	"fmt"
)

// Sentinel errors, matched with errors.Is. The errors the store returns wrap
// them in a *dsherr.Error carrying the code the CLI maps to an exit status.
var (
	// ErrNoDatabase: a read-only open found no database file (or an empty
	// one that was never initialized).
	ErrNoDatabase = errors.New("no database")
	// ErrNotFound: no session with the requested id (dsherr NOT_FOUND).
	ErrNotFound = errors.New("session not found")
	// ErrDuplicate: a session with that id already exists (dsherr DUPLICATE_CHILD).
	ErrDuplicate = errors.New("session already exists")
	// ErrCorrupt: a stored row before the last committed turn/end cannot be
	// decoded or breaks seq contiguity (dsherr INVALID_LOG).
	ErrCorrupt = errors.New("corrupt session log")
	// ErrSchemaTooNew: the file was migrated by a newer dsh.
	ErrSchemaTooNew = errors.New("database schema is newer than this dsh")
	// ErrForeignDatabase: the file is a SQLite database that dsh did not create.
	ErrForeignDatabase = errors.New("not a dsh database")
)

// StaleWriterError rejects an append whose writer's view of the log is out of
// date: it expected the next seq to be Expected, but the stored log ends at
// Stored-1. Nothing was written.
type StaleWriterError struct {
	ID       string
	Expected int64
	Stored   int64
}

func (e *StaleWriterError) Error() string {
	return fmt.Sprintf("stale writer for session %q: append starts at seq %d, stored next seq is %d", e.ID, e.Expected, e.Stored)
}

// CorruptRowError names the committed row that cannot be read. It matches
// ErrCorrupt with errors.Is.
type CorruptRowError struct {
	ID     string
	Seq    int64
	Reason string
}

func (e *CorruptRowError) Error() string {
	return fmt.Sprintf("corrupt session log %q: invalid committed row at seq %d: %s", e.ID, e.Seq, e.Reason)
}

func (e *CorruptRowError) Is(target error) bool { return target == ErrCorrupt }
