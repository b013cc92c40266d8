// Package sqliteread decides how to open a SQLite file for reading so that
// nothing is written beside it: not the -shm index, not a new -wal, not a
// modification time. dsh's own store and DSH's schema-17 store are both read
// through it.
//
// SQLite needs a WAL database's -shm index to read it, and a plain read-only
// connection creates the index when it is missing and writes to it when it
// is there. The choice here, by what lies beside the database:
//
//   - an -shm file: mode=ro with readonly_shm=1. SQLite maps the index read
//     only and, where it cannot use it, rebuilds it in private memory from
//     the -wal; committed transactions still in the -wal are read, and a
//     concurrent writer's locks are honoured.
//   - an -shm that no connection holds and whose salts differ from the
//     -wal header's: SQLite cannot read through it (it retries for seconds,
//     then fails with SQLITE_PROTOCOL). A writer killed after it began a new
//     -wal and before its first commit leaves this; the -shm is then treated
//     as missing (below).
//   - no -shm and a -wal holding a committed transaction: refused
//     (ErrWALWithoutIndex). Only an index can expose it, and building one
//     means writing the -shm.
//   - neither (an archived or copied file), or a -wal with no committed
//     transaction (empty, a header only, or frames a killed writer never
//     committed): immutable=1 for a WAL-mode file. Every connection to a WAL
//     database holds its -shm for as long as it is open, so no process has
//     the file open, and the database file alone holds every commit;
//     immutable takes no locks and creates nothing.
//   - a rollback-journal file without an -shm: mode=ro. Its readers create
//     nothing; a hot journal left by a crashed writer fails with
//     SQLITE_READONLY_ROLLBACK, which HotJournal recognises.
package sqliteread

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"

	"modernc.org/sqlite"
)

// ErrWALWithoutIndex: the database's -wal holds data but its -shm is
// missing, or is stale and held by no connection.
var ErrWALWithoutIndex = errors.New("write-ahead log without its index")

// walFormat is the value of header bytes 18 and 19 (file format write and
// read versions) of a database in WAL mode.
const walFormat = 2

// Query adds to q the URI parameters that open the database at abs for
// reading without writing anything beside it (see the package comment).
func Query(abs string, q url.Values) error {
	q.Set("mode", "ro")
	index := "is missing"
	if _, err := os.Stat(abs + "-shm"); err == nil {
		stale, err := staleIndex(abs)
		if err != nil {
			return err
		}
		if !stale {
			q.Set("readonly_shm", "1")
			return nil
		}
		index = "does not cover (a writer was killed before it updated the index)"
	}
	committed, err := walCommitted(abs + "-wal")
	if err != nil {
		return err
	}
	if committed {
		return fmt.Errorf("%s-wal holds a committed transaction that its index %s-shm %s, and reading it would mean writing the index: %w",
			abs, abs, index, ErrWALWithoutIndex)
	}
	isWAL, err := walMode(abs)
	if err != nil {
		return err
	}
	if isWAL {
		q.Set("immutable", "1")
	}
	return nil
}

// The parts of the on-disk WAL formats that Query reads (SQLite's file
// format: "The WAL File Format" and "The WAL-Index Format").
const (
	walHeaderSize      = 32
	walFrameHeaderSize = 24
	// walSaltOffset is where the -wal header keeps its two salts.
	walSaltOffset = 16
	// The -shm starts with two copies of a 48-byte header: isInit at
	// byte 12, the salts SQLite expects in the -wal header at byte 32.
	shmHeaderSize = 48
	shmInitOffset = 12
	shmSaltOffset = 32
	// shmDMSByte is the byte of the -shm that every connection holds a
	// shared lock on for as long as it has the database open (the unix
	// VFS's "dead man switch").
	shmDMSByte = 128
)

// walCommitted reports whether the -wal at path holds a committed
// transaction: a run of frames from its start, each with the header's salts
// and a checksum that continues the one before, that ends in a commit frame
// (SQLite's recovery reads it the same way). A missing or empty file, a
// header only, or frames a killed writer never committed hold none, and the
// database file alone is then the whole database. The file is read frame by
// frame, never whole.
func walCommitted(path string) (bool, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	r := bufio.NewReader(f)
	var h [walHeaderSize]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return false, nil // shorter than a header
	}
	magic := binary.BigEndian.Uint32(h[0:4])
	if magic&^1 != walMagic {
		return false, nil // SQLite ignores a -wal without its magic
	}
	var order binary.ByteOrder = binary.LittleEndian
	if magic&1 == 1 {
		order = binary.BigEndian
	}
	s0, s1 := walChecksum(order, h[:24], 0, 0)
	if s0 != binary.BigEndian.Uint32(h[24:28]) || s1 != binary.BigEndian.Uint32(h[28:32]) {
		return false, nil
	}
	pageSize := int(binary.BigEndian.Uint32(h[8:12]))
	if pageSize == 1 {
		pageSize = 65536
	}
	if pageSize < 512 || pageSize > 65536 || pageSize&(pageSize-1) != 0 {
		return false, nil
	}
	frame := make([]byte, walFrameHeaderSize+pageSize)
	for {
		if _, err := io.ReadFull(r, frame); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return false, nil
			}
			return false, err
		}
		if !bytes.Equal(frame[8:16], h[walSaltOffset:walSaltOffset+8]) {
			return false, nil
		}
		s0, s1 = walChecksum(order, frame[:8], s0, s1)
		s0, s1 = walChecksum(order, frame[walFrameHeaderSize:], s0, s1)
		if s0 != binary.BigEndian.Uint32(frame[16:20]) || s1 != binary.BigEndian.Uint32(frame[20:24]) {
			return false, nil
		}
		if binary.BigEndian.Uint32(frame[4:8]) != 0 {
			return true, nil // a commit frame
		}
	}
}

// walMagic is the -wal header's magic number; its low bit says whether the
// checksums read the data as big-endian words.
const walMagic = 0x377f0682

// walChecksum continues SQLite's WAL checksum (s0, s1) over data, a
// multiple of 8 bytes read as 32-bit words in order.
func walChecksum(order binary.ByteOrder, data []byte, s0, s1 uint32) (uint32, uint32) {
	for i := 0; i+8 <= len(data); i += 8 {
		s0 += order.Uint32(data[i:]) + s1
		s1 += order.Uint32(data[i+4:]) + s0
	}
	return s0, s1
}

// staleIndex reports whether SQLite would fail to read through the -shm
// beside abs: no connection holds it (so SQLite reads it as unreliable and
// checks it against the -wal) and its header is initialised with salts the
// -wal header does not have. A -shm that cannot be judged is left to SQLite.
func staleIndex(abs string) (bool, error) {
	shm, err := os.Open(abs + "-shm")
	if err != nil {
		return false, nil
	}
	defer shm.Close()
	var hdr [2 * shmHeaderSize]byte
	if _, err := io.ReadFull(shm, hdr[:]); err != nil {
		return false, nil
	}
	first, second := hdr[:shmHeaderSize], hdr[shmHeaderSize:]
	if first[shmInitOffset] != 1 || !bytes.Equal(first, second) {
		return false, nil // SQLite rebuilds such an index in memory
	}
	wal, err := os.Open(abs + "-wal")
	if err != nil {
		return false, nil
	}
	defer wal.Close()
	var wh [walHeaderSize]byte
	if _, err := io.ReadFull(wal, wh[:]); err != nil {
		return false, nil
	}
	if bytes.Equal(first[shmSaltOffset:shmSaltOffset+8], wh[walSaltOffset:walSaltOffset+8]) {
		return false, nil
	}
	// A live connection keeps the index current: then the salts differ
	// only for the moment a writer restarts the -wal, and SQLite reads
	// through the index as usual. F_GETLK needs no write access and takes
	// no lock.
	held, err := lockHeld(shm, shmDMSByte)
	if err != nil {
		return false, err
	}
	return !held, nil
}

// walMode reports whether the database header says WAL mode. A file too
// short to have a header is left for SQLite to judge.
func walMode(abs string) (bool, error) {
	f, err := os.Open(abs)
	if err != nil {
		return false, err
	}
	defer f.Close()
	var h [20]byte
	if _, err := io.ReadFull(f, h[:]); err != nil {
		return false, nil
	}
	return h[18] == walFormat && h[19] == walFormat, nil
}

// sqliteReadonlyRollback is SQLITE_READONLY_ROLLBACK: a read-only connection
// found a hot journal it may not roll back.
const sqliteReadonlyRollback = 776

// HotJournal reports whether err is SQLite refusing to read a database
// because a crashed writer left a hot rollback journal beside it.
func HotJournal(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code() == sqliteReadonlyRollback
}
