package migrations

import (
	"strings"
	"testing"
	"testing/fstest"
)

// Load orders the files by number and refuses a gap or a badly named file,
// for either backend's set.
func TestLoad(t *testing.T) {
	file := func(text string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(text)} }
	ms, err := Load(fstest.MapFS{"0002_b.sql": file("B\n" + BackfillMarker + "\nFILL"), "0001_a.sql": file("A")})
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 2 || ms[0] != (Migration{Version: 1, Name: "a", SQL: "A"}) || ms[1] != (Migration{Version: 2, Name: "b", SQL: "B", Backfill: "FILL"}) {
		t.Errorf("Load = %+v, want 0001_a then 0002_b with its back-fill", ms)
	}
	for name, fsys := range map[string]fstest.MapFS{
		"expected number 0002": {"0001_a.sql": file("A"), "0003_c.sql": file("C")},
		"not named":            {"0001_A.sql": file("A")},
	} {
		if _, err := Load(fsys); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("Load(%v) = %v, want an error containing %q", fsys, err, name)
		}
	}
	for _, fsys := range []struct {
		name string
		set  func() ([]Migration, error)
	}{{"sqlite", func() ([]Migration, error) { return Load(FS) }}, {"postgres", func() ([]Migration, error) { return Load(PostgresFS) }}} {
		if ms, err := fsys.set(); err != nil || len(ms) == 0 {
			t.Errorf("%s migrations: %d loaded, %v", fsys.name, len(ms), err)
		}
	}
}
