package pgstore

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	neturl "net/url"
	"os"
	"os/exec"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dsh-project/dsh/internal/pgtest"
	"github.com/dsh-project/dsh/internal/session"
)

// The crash tests run a writer in a child process (this test binary, re-run
// with crashRoleEnv set), let it write for a while, SIGKILL it and check the
// database against the ledger of writes the child had acknowledged (one
// stdout line after each write returned): nothing acknowledged is lost and
// no partially written batch or session is visible.
const (
	crashRoleEnv = "DSH_PGSTORE_CRASH_ROLE"
	crashDBEnv   = "DSH_PGSTORE_CRASH_DB"
	crashTurns   = 400
	crashSeed    = 0x5eed
	crashKills   = 4
	crashImports = 10_000
	importEvents = 300 // per imported session: several round trips of rows
)

func TestMain(m *testing.M) {
	switch os.Getenv(crashRoleEnv) {
	case "append":
		os.Exit(crashChild(appendWriter))
	case "import":
		os.Exit(crashChild(importWriter))
	}
	os.Exit(m.Run())
}

func crashChild(run func(ctx context.Context, s *Store, ack func(string)) error) int {
	ctx := context.Background()
	s, err := Open(ctx, os.Getenv(crashDBEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, "crash writer:", err)
		return 1
	}
	out := bufio.NewWriter(os.Stdout)
	ack := func(line string) {
		out.WriteString(line + "\n")
		out.Flush()
	}
	if err := run(ctx, s, ack); err != nil {
		fmt.Fprintln(os.Stderr, "crash writer:", err)
		return 1
	}
	return 0
}

// crashStream is the log the append writer writes, event by event, and the
// batch boundaries it writes it in: both fixed by the seed, so every
// writer, and the checker, agree on them whatever was stored before.
func crashStream() ([]session.Event, map[int]bool) {
	b := &events{}
	for i := range crashTurns {
		b.turnStart(fmt.Sprintf("prompt %d", i)).answer(fmt.Sprintf("answer %d", i))
	}
	r := rand.New(rand.NewPCG(crashSeed, crashSeed))
	cuts := map[int]bool{0: true}
	for at := 0; at < len(b.list); {
		at = min(at+1+r.IntN(9), len(b.list))
		cuts[at] = true
	}
	return b.list, cuts
}

func appendWriter(ctx context.Context, s *Store, ack func(string)) error {
	stream, cuts := crashStream()
	ins, err := s.Inspect(ctx, "crash")
	if err != nil {
		return err
	}
	at := len(ins.Events)
	for at < len(stream) {
		end := at + 1
		for !cuts[end] {
			end++
		}
		if err := s.Append(ctx, "crash", int64(at), stream[at:end]); err != nil {
			return err
		}
		at = end
		ack(strconv.Itoa(at))
	}
	return nil
}

func importWriter(ctx context.Context, s *Store, ack func(string)) error {
	for i := range crashImports {
		id := fmt.Sprintf("imported-%05d", i)
		if _, err := s.Header(ctx, id); err == nil {
			continue
		}
		if _, err := s.ImportSession(ctx, header(id, ptr("parent"), int64(i)), importLog(i), nil); err != nil {
			return err
		}
		ack(id)
	}
	return nil
}

func importLog(i int) []session.Event {
	b := &events{}
	for t := 0; len(b.list) < importEvents; t++ {
		b.turnStart(fmt.Sprintf("session %d prompt %d", i, t)).answer(strings.Repeat("x", 200))
	}
	return b.list
}

// runAndKill starts a writer child, lets it acknowledge a random number of
// writes, kills it with SIGKILL and returns the lines it acknowledged.
func runAndKill(t *testing.T, role, url string, r *rand.Rand) []string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashRoleEnv+"="+role, crashDBEnv+"="+withAppName(t, url, crashWriterApp))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The kill is aimed by the writer's progress, not by a fixed sleep: a
	// sleep lets a fast writer finish its whole stream before the kill (or
	// a slow one acknowledge nothing). After the killAt-th acknowledgement
	// a short random pause puts the SIGKILL inside the next write.
	killAt := 1 + r.IntN(40)
	reached := make(chan struct{})
	scanned := make(chan struct{})
	lines := make(chan []string, 1)
	go func() {
		var acked []string
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			acked = append(acked, sc.Text())
			if len(acked) == killAt {
				close(reached)
			}
		}
		close(scanned)
		lines <- acked
	}()
	select {
	case <-reached:
		time.Sleep(time.Duration(r.IntN(3000)) * time.Microsecond)
	case <-scanned:
	case <-time.After(60 * time.Second):
	}
	cmd.Process.Signal(syscall.SIGKILL)
	acked := <-lines
	err = cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
		t.Fatalf("writer ended before it was killed (%v): %s", err, stderr.String())
	}
	waitWritersGone(t, url)
	return acked
}

// crashWriterApp is the application_name the writer's connections carry.
const crashWriterApp = "dsh-crash-writer"

func withAppName(t *testing.T, rawURL, app string) string {
	u, err := neturl.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("application_name", app)
	u.RawQuery = q.Encode()
	return u.String()
}

// waitWritersGone waits until the server has ended the killed writer's
// sessions. A COMMIT the writer sent just before it died may still be
// executing when the process is gone; it commits or rolls back on its own
// (what is acknowledged was committed either way), and the check and the
// next writer must see the outcome, not race it.
func waitWritersGone(t *testing.T, url string) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for deadline := time.Now().Add(30 * time.Second); ; {
		var n int
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database()", crashWriterApp).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the killed writer's %d server session(s) are still open after 30s", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestCrashMidAppendLosesNothingAcknowledged(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	s := openT(t, url)
	if err := s.CreateSession(ctx, header("crash", nil, 1), nil); err != nil {
		t.Fatal(err)
	}
	stream, cuts := crashStream()
	r := rand.New(rand.NewPCG(1, 2))
	for kill := range crashKills {
		acked := runAndKill(t, "append", url, r)
		ins, err := s.Inspect(ctx, "crash")
		if err != nil {
			t.Fatalf("kill %d: the log does not read after the crash: %v", kill, err)
		}
		stored := len(ins.Events)
		if len(acked) > 0 {
			last, _ := strconv.Atoi(acked[len(acked)-1])
			if stored < last {
				t.Fatalf("kill %d: %d events stored, but the writer had acknowledged %d", kill, stored, last)
			}
		}
		if !cuts[stored] {
			t.Fatalf("kill %d: %d events stored, which ends inside a batch (a partial append is visible)", kill, stored)
		}
		if !reflect.DeepEqual(ins.Events, stream[:stored]) {
			t.Fatalf("kill %d: stored events differ from what was written", kill)
		}
		t.Logf("kill %d: %d batches acknowledged this run, %d events stored", kill, len(acked), stored)
	}
}

func TestCrashMidImportLosesNothingAcknowledged(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: kills importers mid-transaction (about 6 s); go test ./... runs it")
	}
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	s := openT(t, url)
	if err := s.CreateSession(ctx, header("parent", nil, 0), nil); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	var acked []string
	for kill := range crashKills {
		acked = append(acked, runAndKill(t, "import", url, r)...)
		for _, id := range acked {
			if _, err := s.Header(ctx, id); err != nil {
				t.Fatalf("kill %d: acknowledged session %s: %v", kill, id, err)
			}
		}
		// Every session that is visible at all is whole.
		var n int
		err := s.ChildrenOf(ctx, "parent", func(h session.Header) error {
			n++
			var i int
			fmt.Sscanf(h.ID, "imported-%d", &i)
			ins, err := s.Inspect(ctx, h.ID)
			if err != nil {
				return fmt.Errorf("%s: %w", h.ID, err)
			}
			if !reflect.DeepEqual(ins.Events, importLog(i)) {
				return fmt.Errorf("%s is visible with %d of its %d events", h.ID, len(ins.Events), len(importLog(i)))
			}
			return nil
		})
		if err != nil {
			t.Fatalf("kill %d: %v", kill, err)
		}
		if n < len(acked) {
			t.Fatalf("kill %d: %d sessions stored, %d acknowledged", kill, n, len(acked))
		}
		t.Logf("kill %d: %d sessions acknowledged in all, %d stored", kill, len(acked), n)
	}
}
