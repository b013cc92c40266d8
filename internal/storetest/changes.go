package storetest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dsh-project/dsh/internal/backend"
)

// writerEnv carries the address a re-executed test binary writes one
// session to, for the change signal's other-process case.
const writerEnv = "DSH_STORETEST_WRITE_ADDR"

// writeResult prefixes what the writing process prints: the time its
// commit returned, in Unix nanoseconds.
const writeResult = "storetest-change-writer: committed "

// changeWait bounds how long the signal may take to report a commit; the
// contract promises well under a second (a watcher's user is waiting).
const changeWait = time.Second

// quietInterval is how long a watch of an unchanging store must stay
// silent.
const quietInterval = 500 * time.Millisecond

func testChangeSignal(t *testing.T, e *env) {
	e.create(root("p", 1), turn(0, 1))
	beforeFiles := ""
	if e.target.Fingerprint != nil {
		var err error
		if beforeFiles, err = e.target.Fingerprint(e.addr); err != nil {
			t.Fatal(err)
		}
	}
	ro := e.open(true)
	cn, ok := ro.(backend.ChangeNotifier)
	if !ok {
		t.Fatalf("%T is no backend.ChangeNotifier", ro)
	}
	w := Watch(e.ctx, t, cn)
	w.Next("the watch in place", changeWait)
	w.Quiet("once in place", quietInterval)
	if e.target.Fingerprint != nil {
		after, err := e.target.Fingerprint(e.addr)
		if err != nil {
			t.Fatal(err)
		}
		if after != beforeFiles {
			t.Errorf("watching a read-only open changed what is stored:\n%s\nwant\n%s", after, beforeFiles)
		}
	}

	// Another connection of this process.
	e.create(root("same-process", 2), nil)
	since := time.Now()
	t.Logf("a commit in another connection woke the watcher after %s", w.Next("a commit in another connection", changeWait).Sub(since))
	w.Drain()

	// Another process.
	top, _, _ := strings.Cut(t.Name(), "/")
	cmd := exec.CommandContext(e.ctx, os.Args[0], "-test.run=^"+top+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), writerEnv+"="+e.addr)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("writer process: %v\n%s", err, out)
	}
	_, stamp, found := strings.Cut(string(out), writeResult)
	if !found {
		t.Fatalf("writer process printed no commit time:\n%s", out)
	}
	ns, err := strconv.ParseInt(strings.Fields(stamp)[0], 10, 64)
	if err != nil {
		t.Fatalf("writer process: %v\n%s", err, out)
	}
	committed := time.Unix(0, ns)
	t.Logf("a commit in another process woke the watcher after %s", w.Next("a commit in another process", changeWait).Sub(committed))
	w.Stop(changeWait)
}

// writeChild is Run in a re-executed test binary: open the store, create
// one session, print when the commit returned.
func writeChild(t *testing.T, target Target, addr string) {
	ctx := context.Background()
	b, err := target.Open(ctx, addr, false)
	if err != nil {
		t.Fatalf("writer: open %s: %v", addr, err)
	}
	defer b.Close()
	if err := b.CreateSession(ctx, root("other-process", 3), nil); err != nil {
		t.Fatalf("writer: CreateSession: %v", err)
	}
	fmt.Printf("%s%d\n", writeResult, time.Now().UnixNano())
}
