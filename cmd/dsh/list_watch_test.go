package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A watch reads the database for as long as it runs and writes nothing:
// the file, its WAL and the WAL's index keep their bytes and modification
// times. Its context ending (as the first SIGINT ends it) is its normal end,
// exit 0, after the first listing as ADDED events.
func TestListWatchLeavesDatabaseUntouched(t *testing.T) {
	home := isolateEnv(t)
	db := filepath.Join(home, "corpus", "dsh.db")
	t.Setenv("DSH_DB", db)
	seedReadOnlyCorpus(t, db)
	files := []string{db, db + "-wal", db + "-shm"}
	before := make([]fileState, len(files))
	for i, f := range files {
		before[i] = stateOf(t, f)
	}
	time.Sleep(10 * time.Millisecond)

	// Long enough for several of the signal's polls.
	ctx, cancel := context.WithTimeout(context.Background(), 600*time.Millisecond)
	defer cancel()
	var out, errOut bytes.Buffer
	code := run(ctx, []string{"list", "--parent", "balanced", "--watch", "-o", "jsonl"}, strings.NewReader(""), &out, &errOut, time.Now)
	if code != 0 || errOut.Len() > 0 {
		t.Fatalf("list --watch ended by its context: exit %d, stderr %q; want 0 and nothing", code, errOut.String())
	}
	want := `{"type":"ADDED","row":{"kind":"child","id":"child","mode":"continuable","label":"kept","activity":"inactive","hasChildren":false}}` + "\n" +
		`{"type":"ADDED","row":{"kind":"child","id":"torn-child","mode":"continuable","label":"kept","activity":"inactive","hasChildren":false}}` + "\n"
	if out.String() != want {
		t.Errorf("list --watch printed\n%s\nwant\n%s", out.String(), want)
	}
	for i, f := range files {
		after := stateOf(t, f)
		switch {
		case after.exists != before[i].exists:
			t.Errorf("%s existence changed: %v → %v", filepath.Base(f), before[i].exists, after.exists)
		case !bytes.Equal(after.content, before[i].content):
			t.Errorf("%s bytes changed", filepath.Base(f))
		case !after.mtime.Equal(before[i].mtime):
			t.Errorf("%s modification time changed", filepath.Base(f))
		}
	}
}
