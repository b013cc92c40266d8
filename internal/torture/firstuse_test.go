package torture

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-project/dsh/internal/pgtest"
)

// TestTortureFirstUse runs 16 dsh processes at once as the first users of
// a new database, DSH_TORTURE_FIRSTUSE_ROUNDS times (default 50) on SQLite
// and, where a server answers, PostgreSQL: `session new`, then `demo`
// (fixed ids) on another new database. Every process must succeed: one
// creates and migrates the store while the others wait for it, and of the
// demos one writes each session while the others find it.
func TestTortureFirstUse(t *testing.T) {
	requireTorture(t)
	rounds := envInt(t, "DSH_TORTURE_FIRSTUSE_ROUNDS", 50)
	const procs = 16
	bin := dshBinary(t)
	fresh := map[string]func(t *testing.T) string{
		"sqlite": func(t *testing.T) string { return filepath.Join(t.TempDir(), "first.db") },
	}
	if _, err := pgtest.Probe(); err == nil || pgtest.Required() {
		fresh["postgres"] = func(t *testing.T) string { return pgtest.NewDatabase(t) }
	}
	for name, newDB := range fresh {
		t.Run(name, func(t *testing.T) {
			ran := 0
			for round := range rounds {
				for _, args := range [][]string{{"session", "new"}, {"demo", "-o", "json"}} {
					db := newDB(t)
					var wg sync.WaitGroup
					results := make([]dshResult, procs)
					errs := make([]error, procs)
					ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
					for i := range procs {
						wg.Go(func() { results[i], errs[i] = runDsh(ctx, bin, db, args...) })
					}
					wg.Wait()
					cancel()
					for i := range procs {
						if errs[i] != nil || results[i].code != 0 {
							t.Fatalf("round %d, dsh %v, process %d: %v %v", round, args, i, errs[i], results[i])
						}
					}
					ran += procs
				}
			}
			t.Logf("first use: %s: %d processes in %d rounds of %d, none failed", name, ran, rounds, procs)
		})
	}
}

// TestTortureKillEarlyThenRead kills a writer (`dsh session new` on an
// initialised store) within its first milliseconds DSH_TORTURE_EARLY_KILLS
// times (default 200), then runs read commands only: each must read every
// session committed so far, whatever the kill left beside the file (a -wal
// holding only a header or uncommitted frames, an -shm with another -wal's
// salts, a commit the -shm does not cover).
func TestTortureKillEarlyThenRead(t *testing.T) {
	requireTorture(t)
	kills := envInt(t, "DSH_TORTURE_EARLY_KILLS", 200)
	bin := dshBinary(t)
	db := filepath.Join(t.TempDir(), "early.db")
	ctx := context.Background()
	if res, err := runDsh(ctx, bin, db, "init"); err != nil || res.code != 0 {
		t.Fatalf("init: %v %v", err, res)
	}
	r := rand.New(rand.NewPCG(1, 2))
	killed, states := 0, map[string]int{}
	for range kills {
		cmd := exec.Command(bin, "--db", db, "session", "new")
		cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+filepath.Dir(db))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(r.IntN(15_000)) * time.Microsecond)
		if cmd.Process.Signal(syscall.SIGKILL) == nil {
			killed++
		}
		cmd.Wait()
		states[besideState(db)]++
		ls, err := runDsh(ctx, bin, db, "session", "ls", "-o", "jsonl")
		if err != nil || ls.code != 0 {
			t.Fatalf("after a kill (%s): session ls: %v %v", besideState(db), err, ls)
		}
		n := strings.Count(ls.stdout, "\n")
		for _, args := range [][]string{{"diagnose", "--all"}, {"session", "ls"}} {
			if res, err := runDsh(ctx, bin, db, args...); err != nil || res.code != 0 {
				t.Fatalf("after a kill (%s): dsh %v: %v %v", besideState(db), args, err, res)
			}
		}
		if res, _ := runDsh(ctx, bin, db, "diagnose", "--all"); !strings.Contains(res.stderr, fmt.Sprintf("examined %d session(s)", n)) {
			t.Fatalf("diagnose saw other sessions than session ls's %d: %s", n, res.stderr)
		}
	}
	t.Logf("early kills: %d writers killed in their first 15 ms, every read after each worked; states beside the file: %v", killed, states)
}

// besideState names the sizes of the -wal and -shm beside db.
func besideState(db string) string {
	var parts []string
	for _, side := range []string{"-wal", "-shm"} {
		if fi, err := os.Stat(db + side); err == nil {
			parts = append(parts, fmt.Sprintf("%s %d B", side, fi.Size()))
		} else {
			parts = append(parts, "no "+side)
		}
	}
	return strings.Join(parts, ", ")
}
