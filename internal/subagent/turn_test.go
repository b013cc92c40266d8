package subagent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/dshfixtures"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/sqlitepersist"
)

// A provider failure or timeout ends the turn with DSH's error reason; the
// child exists and its lease is released.
func TestTurnErrorReasons(t *testing.T) {
	tests := []struct {
		name    string
		cfg     ProviderConfig
		wantEnd string
	}{
		{"exit status", ProviderConfig{Name: ProviderExec, Command: "echo 'no route' >&2; exit 7"},
			`{"turn":1,"reason":{"kind":"error","error":{"message":"exec provider: command exited with status 7: no route","code":"EXEC_FAILED"}}}`},
		{"timeout", ProviderConfig{Name: ProviderExec, Command: "sleep 60", Timeout: 100 * time.Millisecond},
			`{"turn":1,"reason":{"kind":"error","error":{"message":"exec provider timed out after 100ms","code":"TIMEOUT"}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newRuntimeEnv(t)
			res := e.start(StartRequest{Mode: ModeContinuable, Label: labelp("w"), Message: "m", Provider: tt.cfg})
			if res.Outcome.Kind != OutcomeError || res.Outcome.Failure == nil {
				t.Fatalf("outcome %+v", res.Outcome)
			}
			log := e.events(res.ChildID)
			tail := log[len(log)-3:]
			if typesOf(tail) != "user/message step/end turn/end" || string(tail[2].Data) != tt.wantEnd {
				t.Errorf("turn ends %s %s, want no reply and %s", typesOf(tail), tail[2].Data, tt.wantEnd)
			}
			if ls, _ := e.st.Leases(e.ctx); len(ls) != 0 {
				t.Errorf("lease left: %+v", ls)
			}
		})
	}
}

// waitFor polls cond until it holds; it fails the test after a generous
// deadline (conditions here depend on other goroutines or processes).
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// countingReader counts cold reads, to show that a running child is listed
// from its holder's snapshot alone.
type countingReader struct {
	ColdReader
	mu    sync.Mutex
	reads map[string]int
}

func (c *countingReader) ColdRead(ctx context.Context, id string, types []string) (session.Header, []session.Event, error) {
	c.mu.Lock()
	c.reads[id]++
	c.mu.Unlock()
	return c.ColdReader.ColdRead(ctx, id, types)
}

// listOne lists p's children and returns the row of id ("" when omitted)
// and how many times id's log was read.
func (e *runtimeEnv) listOne(id string) (string, int) {
	e.t.Helper()
	l := NewStoreLister(e.st, e.st, 0)
	counter := &countingReader{ColdReader: l.Cold, reads: map[string]int{}}
	l.Cold = counter
	rows, err := l.ListChildren(e.ctx, "p")
	if err != nil {
		e.t.Fatal(err)
	}
	for _, r := range rows {
		if r.ID == id {
			if r.Kind == KindDiagnostic {
				return "diagnostic " + string(r.Reason), counter.reads[id]
			}
			return fmt.Sprintf("%s %s %s", r.Activity, r.Mode, *r.Label), counter.reads[id]
		}
	}
	return "", counter.reads[id]
}

// startAsync runs a start in the background; the exec command waits for
// the file gate to appear.
func (e *runtimeEnv) startAsync(ctx context.Context, req StartRequest) (gate string, done chan startDone) {
	gate = filepath.Join(e.t.TempDir(), "gate")
	req.Provider = ProviderConfig{Name: ProviderExec, Command: "while [ ! -e " + gate + " ]; do sleep 0.01; done; echo ok"}
	req.Parent, req.MaxDepth, req.Message = "p", 2, "m"
	// A test that gives up on the turn (awaitTurn's deadline) must not
	// leave it running: the cleanup cancels it and waits for it to end
	// before the store closes.
	ctx, cancel := context.WithCancel(ctx)
	done = make(chan startDone, 1)
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		res, err := e.rt.Start(ctx, req)
		done <- startDone{res, err}
	}()
	e.t.Cleanup(func() {
		cancel()
		select {
		case <-finished:
		case <-time.After(turnDeadline):
			e.t.Errorf("the turn did not end %s after it was cancelled", turnDeadline)
		}
	})
	return gate, done
}

// turnDeadline bounds every wait for a turn to end, so that a turn that
// never does (a lease loss or a cancellation missed) fails its test rather
// than hanging the suite until go test's own timeout.
const turnDeadline = 30 * time.Second

// awaitTurn waits for a turn started by startAsync to end, failing t after
// turnDeadline.
func awaitTurn(t testing.TB, what string, done <-chan startDone) startDone {
	t.Helper()
	select {
	case d := <-done:
		return d
	case <-time.After(turnDeadline):
		t.Fatalf("%s: the turn did not end within %s", what, turnDeadline)
		return startDone{}
	}
}

// waitTurnRunning waits until id's turn has reached its provider: the
// turn's first batch, which ends with the user message, is durable.
func (e *runtimeEnv) waitTurnRunning(id string) {
	e.t.Helper()
	waitFor(e.t, "the running turn", func() bool {
		in, err := e.st.Inspect(e.ctx, id)
		return err == nil && len(in.Events) > 0 && in.Events[len(in.Events)-1].Type == session.TypeUserMessage
	})
}

type startDone struct {
	res *TurnResult
	err error
}

func touch(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
}

// While its turn runs a child is `running`, read from the holder's
// published snapshot with no log read; after the turn it is `inactive`.
func TestListingWhileTurnRuns(t *testing.T) {
	for _, mode := range []Mode{ModeContinuable, ModeOneShot} {
		t.Run(string(mode), func(t *testing.T) {
			e := newRuntimeEnv(t)
			e.rt.Heartbeat, e.rt.LeaseTTL = 20*time.Millisecond, time.Minute
			gate, done := e.startAsync(e.ctx, StartRequest{ChildID: "c", Mode: mode, Label: labelp("busy")})
			var row string
			var reads int
			waitFor(t, "the running row", func() bool { row, reads = e.listOne("c"); return row != "" })
			if want := "running " + string(mode) + " busy"; row != want || reads != 0 {
				t.Fatalf("while running: %q with %d log reads, want %q from the snapshot", row, reads, want)
			}
			touch(t, gate)
			d := awaitTurn(t, "after the gate opened", done)
			if d.err != nil || d.res.Outcome.Kind != OutcomeCompleted || d.res.Outcome.Reply != "ok" {
				t.Fatalf("start: %+v, %v", d.res, d.err)
			}
			if row, _ := e.listOne("c"); row != "inactive "+string(mode)+" busy" {
				t.Errorf("after the turn: %q", row)
			}
		})
	}
}

// The creation window: a child whose holder has published no identity yet
// (DSH's one-shot child before its first turn reaches the descriptor) is
// omitted while it is held, and corrupt once it is settled without one.
func TestCreationWindowOmitted(t *testing.T) {
	e := newRuntimeEnv(t)
	h := authoredChild("c", "p", nil)
	holder := backend.NewLeaseHolder(time.Minute)
	w := e.rt.newChildWriter(holder, h, nil)
	err := e.st.Update(e.ctx, func(tx backend.Store) error {
		if err := tx.CreateSession(e.ctx, h, nil); err != nil {
			return err
		}
		if _, err := tx.AcquireLease(e.ctx, "c", holder); err != nil {
			return err
		}
		snap := w.snapshot()
		return tx.HeartbeatLease(e.ctx, "c", holder, &snap)
	})
	if err != nil {
		t.Fatal(err)
	}
	live, err := e.st.LiveSessions(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if l, ok := live["c"]; !ok || string(l.Subagent) != "null" || l.AsOfSeq != -1 {
		t.Fatalf("live record %+v, want c published with a null view", live)
	}
	if row, reads := e.listOne("c"); row != "" || reads != 0 {
		t.Fatalf("creation window listed as %q (%d reads), want omitted", row, reads)
	}
	if err := e.st.ReleaseLease(e.ctx, "c", holder); err != nil {
		t.Fatal(err)
	}
	if row, _ := e.listOne("c"); row != "diagnostic corrupt" {
		t.Errorf("settled without a descriptor: %q", row)
	}
}

// SIGINT while the provider runs: the command is killed, the turn ends
// aborted by the user, and the lease is released.
func TestTurnCancelled(t *testing.T) {
	e := newRuntimeEnv(t)
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	_, done := e.startAsync(ctx, StartRequest{ChildID: "c", Mode: ModeContinuable, Label: labelp("w")})
	e.waitTurnRunning("c")
	cancel()
	d := awaitTurn(t, "after the cancellation", done)
	if d.err != nil || d.res.Outcome.Kind != OutcomeAborted {
		t.Fatalf("cancelled start: %+v, %v", d.res, d.err)
	}
	log := e.events("c")
	tail := log[len(log)-2:]
	if typesOf(tail) != "step/end turn/end" || string(tail[1].Data) != `{"turn":1,"reason":{"kind":"aborted","reason":{"kind":"user"}}}` {
		t.Errorf("turn ends %s %s", typesOf(tail), tail[1].Data)
	}
	if ls, _ := e.st.Leases(e.ctx); len(ls) != 0 {
		t.Errorf("lease left: %+v", ls)
	}
}

// A holder whose lease is taken over mid-turn stops: it writes nothing more
// and leaves the new holder's lease alone.
func TestTurnStopsWhenLeaseLost(t *testing.T) {
	e := newRuntimeEnv(t)
	e.rt.Heartbeat, e.rt.LeaseTTL = 10*time.Millisecond, time.Minute
	_, done := e.startAsync(e.ctx, StartRequest{ChildID: "c", Mode: ModeContinuable, Label: labelp("w")})
	e.waitTurnRunning("c")
	before := typesOf(e.events("c"))
	// A holder from two minutes on finds the lease expired and takes it.
	thief := backend.LeaseHolder{ID: "thief", TTL: time.Hour}
	later := e.st.WithClock(func() time.Time { return time.Now().Add(2 * time.Minute) })
	if _, err := later.AcquireLease(e.ctx, "c", thief); err != nil {
		t.Fatal(err)
	}
	d := awaitTurn(t, "after the lease was taken over", done)
	if !errors.Is(d.err, backend.ErrLeaseLost) {
		t.Fatalf("start = %+v, %v; want the lease loss", d.res, d.err)
	}
	if after := typesOf(e.events("c")); after != before {
		t.Errorf("the replaced holder wrote: %s", strings.TrimPrefix(after, before))
	}
	if ls, _ := e.st.Leases(e.ctx); len(ls) != 1 || ls[0].Holder != "thief" {
		t.Errorf("leases %+v, want the thief's", ls)
	}
}

// holderProcessEnv, when set, makes the test binary a dsh holder instead of
// running tests (see TestMain): it starts child "c" of "p" in the database
// it names, with an exec turn that writes its pid and sleeps, and never
// finishes on its own.
const holderProcessEnv = "DSH_SUBAGENT_TEST_HOLDER_DB"

func TestMain(m *testing.M) {
	if db := os.Getenv(holderProcessEnv); db != "" {
		os.Exit(runHolderProcess(db))
	}
	os.Exit(dshfixtures.Report(m.Run())) // one line for the fixture tests skipped
}

// runHolderProcess is the holder TestCrashedHolder kills.
func runHolderProcess(db string) int {
	st, err := sqlitepersist.Open(context.Background(), db, sqlitepersist.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	rt := &Runtime{Store: st, LeaseTTL: 300 * time.Millisecond, Heartbeat: 50 * time.Millisecond}
	label := "crashy"
	_, err = rt.Start(context.Background(), StartRequest{Parent: "p", ChildID: "c", Mode: ModeContinuable, Label: &label,
		Message: "long work", MaxDepth: 2,
		// sleep runs as a grandchild of dsh (the shell waits for it), which
		// the kernel's parent-death signal alone would not reach.
		Provider: ProviderConfig{Name: ProviderExec, Command: "echo $$ > " + db + ".exec.pid; sleep 60 & echo $! > " + db + ".sleep.pid; wait"}})
	fmt.Fprintln(os.Stderr, "holder finished:", err)
	return 3
}

// A holder killed with SIGKILL mid-turn: its command dies with it, its lease
// expires, the child lists `inactive`, and a resume takes the lease over,
// closes the interrupted turn and runs its own, losing no committed event.
func TestCrashedHolder(t *testing.T) {
	e := newRuntimeEnv(t)
	db := e.st.Path()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), holderProcessEnv+"="+db)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var execPid, sleepPid int
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		for _, pid := range []int{execPid, sleepPid} {
			if pid > 0 {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	waitFor(t, "the holder's running turn", func() bool { row, _ := e.listOne("c"); return row == "running continuable crashy" })
	execPid = readPid(t, db+".exec.pid")
	sleepPid = readPid(t, db+".sleep.pid")
	committed := e.events("c")

	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	processGone(t, execPid)
	processGone(t, sleepPid)
	waitFor(t, "the lease to expire", func() bool {
		live, err := e.st.LiveSessions(e.ctx)
		return err == nil && len(live) == 0
	})
	if row, _ := e.listOne("c"); row != "inactive continuable crashy" {
		t.Fatalf("after the crash: %q", row)
	}
	ls, _ := e.st.Leases(e.ctx)
	if len(ls) != 1 || ls[0].PID != cmd.Process.Pid || !ls[0].Expired(time.Now()) {
		t.Fatalf("leases %+v, want the crashed holder's expired lease", ls)
	}

	// The recorded route is exec; this turn answers with echo.
	res, err := e.rt.Resume(e.ctx, ResumeRequest{Child: "c", Parent: "p", Message: "are you there?", Provider: ProviderConfig{Name: ProviderEcho}})
	if err != nil {
		t.Fatalf("resume after the crash: %v", err)
	}
	if res.TookOver == nil || res.TookOver.PID != cmd.Process.Pid || typesOf(res.Closers) != "step/end turn/end" || res.Turn != 2 {
		t.Fatalf("resume: took over %+v, closers %s, turn %d", res.TookOver, typesOf(res.Closers), res.Turn)
	}
	in, err := e.st.Inspect(e.ctx, "c")
	if err != nil || !in.Verified || len(in.Closers) != 0 {
		t.Fatalf("log after resume: %v, verified %v", err, in != nil && in.Verified)
	}
	for i, ev := range committed {
		if mustJSON(t, in.Events[i]) != mustJSON(t, ev) {
			t.Fatalf("committed event %d lost or changed", i)
		}
	}
	if got := strings.Join(userTexts(t, in.Events), "|"); got != "long work|are you there?" {
		t.Errorf("user texts %q", got)
	}
	if ls, _ := e.st.Leases(e.ctx); len(ls) != 0 {
		t.Errorf("leases after the resume: %+v", ls)
	}
}

// The cost of the lease per appended event: a one-event batch appended
// under the lease (renewal and snapshot publication in the same
// transaction) against the same batch appended bare.
func BenchmarkAppendUnderLease(b *testing.B) {
	for _, leased := range []bool{false, true} {
		name := "bare"
		if leased {
			name = "lease+snapshot"
		}
		b.Run(name, func(b *testing.B) {
			e := newRuntimeEnv(b)
			e.continuable("c", "bench")
			holder := backend.NewLeaseHolder(time.Minute)
			if _, err := e.st.AcquireLease(e.ctx, "c", holder); err != nil {
				b.Fatal(err)
			}
			in, _ := e.st.Inspect(e.ctx, "c")
			w := e.rt.newChildWriter(holder, in.Header, in.Events)
			data := []byte(`{"title":"t","messageSeqs":[],"source":{"kind":"fallback"}}`)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				w.add("session/title", data)
				if leased {
					if err := e.st.Update(e.ctx, func(tx backend.Store) error { return w.writePending(e.ctx, tx) }); err != nil {
						b.Fatal(err)
					}
					w.committed()
					continue
				}
				if err := e.st.Append(e.ctx, "c", w.next, w.pending); err != nil {
					b.Fatal(err)
				}
				w.next++
				w.pending = nil
			}
		})
	}
}
