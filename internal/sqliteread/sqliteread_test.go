package sqliteread

import (
	"database/sql"
	"errors"
	"net/url"
	"os"
	"path/filepath"
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
	if err := os.WriteFile(path+"-wal", []byte("frames"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Query(path, url.Values{}); !errors.Is(err, ErrWALWithoutIndex) {
		t.Fatalf("a -wal without its -shm: %v, want ErrWALWithoutIndex", err)
	}
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
