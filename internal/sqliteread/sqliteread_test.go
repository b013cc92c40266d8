package sqliteread

import (
	"database/sql"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"testing"

	_ "modernc.org/sqlite"
)

// walDatabase writes a WAL-mode database at dir/x.db, closed: SQLite then
// removes its -wal and -shm.
func walDatabase(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "x.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("CREATE TABLE t (x); INSERT INTO t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestQueryByWhatLiesBeside(t *testing.T) {
	path := walDatabase(t, t.TempDir())
	q := url.Values{}
	if err := Query(path, q); err != nil || q.Get("immutable") != "1" || q.Get("mode") != "ro" {
		t.Fatalf("archived WAL file: %v %v, want mode=ro immutable=1", q, err)
	}
	if err := os.WriteFile(path+"-shm", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	q = url.Values{}
	if err := Query(path, q); err != nil || q.Get("readonly_shm") != "1" || q.Has("immutable") {
		t.Fatalf("with an -shm: %v %v, want readonly_shm=1", q, err)
	}
	os.Remove(path + "-shm")
	// A -wal with no committed transaction (a writer killed before its
	// first commit): the file alone is the database.
	committed := committedWAL(t)
	uncommitted := slices.Clone(committed)
	uncommitted[len(uncommitted)-1] ^= 1 // the commit frame's checksum fails
	for name, wal := range map[string][]byte{"short": []byte("frames"), "header only": committed[:32], "uncommitted": uncommitted} {
		if err := os.WriteFile(path+"-wal", wal, 0o600); err != nil {
			t.Fatal(err)
		}
		q = url.Values{}
		if err := Query(path, q); err != nil || q.Get("immutable") != "1" {
			t.Fatalf("a %s -wal without its -shm: %v %v, want immutable=1", name, q, err)
		}
	}
	if err := os.WriteFile(path+"-wal", committed, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Query(path, url.Values{}); !errors.Is(err, ErrWALWithoutIndex) {
		t.Fatalf("a committed -wal without its -shm: %v, want ErrWALWithoutIndex", err)
	}
}

// committedWAL returns the -wal of a database holding one committed
// transaction in one frame, read while its connection is open.
func committedWAL(t *testing.T) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "w.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec("CREATE TABLE t (x)"); err != nil {
		t.Fatal(err)
	}
	wal, err := os.ReadFile(path + "-wal")
	if err != nil || len(wal) < 32+24+512 {
		t.Fatalf("-wal of %d bytes (%v)", len(wal), err)
	}
	if ok, err := walCommitted(path + "-wal"); !ok || err != nil {
		t.Fatalf("walCommitted of a committed -wal: %v, %v", ok, err)
	}
	return wal
}

// An archived WAL file in a read-only directory reads, and nothing is
// created beside it.
func TestArchivedFileReadsAndCreatesNothing(t *testing.T) {
	dir := t.TempDir()
	path := walDatabase(t, dir)
	q := url.Values{}
	if err := Query(path, q); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", (&url.URL{Scheme: "file", Path: path, RawQuery: q.Encode()}).String())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow("SELECT count(*) FROM t").Scan(&n); err != nil || n != 1 {
		t.Fatalf("count %d, %v", n, err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 1 {
		t.Fatalf("directory holds %v (%v)", entries, err)
	}
}
