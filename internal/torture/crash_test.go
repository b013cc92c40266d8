package torture

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/jsjson"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/sqlitepersist"
	"github.com/dsh-project/dsh/internal/subagent"
)

const (
	crashWriterRole = "crash-writer"
	crashRoot       = "root"
	// crashMaxChildren bounds the children the writer starts, so that each
	// check after a kill stays cheap.
	crashMaxChildren = 6
	// The writer's lease times: short, so that a killed writer's lease
	// lapses quickly and the parent's repairing resume can take over.
	crashLeaseTTL   = 300 * time.Millisecond
	crashHeartbeat  = 100 * time.Millisecond
	crashCreatedAt  = 1789000000000
	crashMaxDelayMs = 150
)

// runCrashWriter is the process the crash test kills: it appends random
// turns to the root session in random batches (so kills land inside turns),
// resumes and starts continuable children, and after every acknowledged
// write appends one ledger line per acknowledged event, fsynced, before
// going on. It runs until it is killed; any error exits 1.
func runCrashWriter() int {
	if err := crashWriter(context.Background(), os.Getenv("DSH_TORTURE_DB"), os.Getenv("DSH_TORTURE_LEDGER"), os.Getenv("DSH_TORTURE_SEED")); err != nil {
		fmt.Fprintln(os.Stderr, "crash writer:", err)
		return 1
	}
	return 0
}

func crashWriter(ctx context.Context, db, ledgerPath, seedText string) error {
	seed, err := strconv.ParseUint(seedText, 10, 64)
	if err != nil {
		return fmt.Errorf("seed %q: %w", seedText, err)
	}
	st, err := sqlitepersist.Open(ctx, db, sqlitepersist.Options{})
	if err != nil {
		return err
	}
	defer st.Close()
	ledger, err := openLedger(ledgerPath, seed)
	if err != nil {
		return err
	}
	defer ledger.Close()
	w := &writer{
		ctx:    ctx,
		st:     st,
		ledger: ledger,
		r:      rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		rt:     &subagent.Runtime{Store: st, LeaseTTL: crashLeaseTTL, Heartbeat: crashHeartbeat},
		seed:   seed,
	}
	root, err := st.Load(ctx, crashRoot)
	if err != nil {
		return err
	}
	log := append(root.Events, root.Closers...)
	w.next, w.turn = int64(len(log)), lastTurn(log)
	err = st.ChildrenOf(ctx, crashRoot, func(h session.Header) error {
		w.children = append(w.children, h.ID)
		return nil
	})
	if err != nil {
		return err
	}
	for {
		switch p := w.r.IntN(10); {
		case p < 6:
			err = w.appendBatch()
		case p < 9 || len(w.children) >= crashMaxChildren:
			err = w.resumeChild()
		default:
			err = w.startChild()
		}
		if err != nil {
			return err
		}
	}
}

// writer is the crash writer's state.
type writer struct {
	ctx      context.Context
	st       *sqlitepersist.Store
	rt       *subagent.Runtime
	ledger   *ledgerWriter
	r        *rand.Rand
	seed     uint64
	next     int64           // the root's next seq
	turn     int64           // the root's last turn number
	pending  []session.Event // the rest of the root's open turn
	children []string
	started  int
}

// appendBatch appends the next 1..n events of the root's current turn,
// opening a new turn when none is open.
func (w *writer) appendBatch() error {
	if len(w.pending) == 0 {
		w.turn++
		w.pending = randomTurn(w.r, w.next, w.turn)
	}
	batch := w.pending[:1+w.r.IntN(len(w.pending))]
	if err := w.st.Append(w.ctx, crashRoot, w.next, batch); err != nil {
		return err
	}
	if err := w.acknowledge(crashRoot, batch); err != nil {
		return err
	}
	w.next += int64(len(batch))
	w.pending = w.pending[len(batch):]
	return nil
}

// resumeChild runs one turn of a random child; a child still leased by a
// killed writer is skipped until its lease lapses.
func (w *writer) resumeChild() error {
	if len(w.children) == 0 {
		return w.startChild()
	}
	id := w.children[w.r.IntN(len(w.children))]
	before, err := w.st.Inspect(w.ctx, id)
	if err != nil {
		return err
	}
	_, err = w.rt.Resume(w.ctx, subagent.ResumeRequest{Child: id, Parent: crashRoot, Message: randomWords(w.r, 1+w.r.IntN(12))})
	if dsherr.CodeOf(err) == dsherr.NotDelivered {
		return nil
	}
	if err != nil {
		return err
	}
	return w.acknowledgeFrom(id, int64(len(before.Events)))
}

func (w *writer) startChild() error {
	w.started++
	id := fmt.Sprintf("c%d-%d", w.seed, w.started)
	label := "worker " + strconv.Itoa(w.started)
	_, err := w.rt.Start(w.ctx, subagent.StartRequest{
		Parent: crashRoot, ChildID: id, Mode: subagent.ModeContinuable, Label: &label,
		Message: randomWords(w.r, 1+w.r.IntN(12)), MaxDepth: 2,
	})
	if err != nil {
		return err
	}
	w.children = append(w.children, id)
	return w.acknowledgeFrom(id, 0)
}

// acknowledgeFrom records the events of child id from seq from on, as a
// write that just returned left them.
func (w *writer) acknowledgeFrom(id string, from int64) error {
	in, err := w.st.Inspect(w.ctx, id)
	if err != nil {
		return err
	}
	var acked []session.Event
	for _, e := range in.Events {
		if e.Seq >= from {
			acked = append(acked, e)
		}
	}
	return w.acknowledge(id, acked)
}

// acknowledge records the events of one write in the ledger, fsynced:
// only then is the next write attempted.
func (w *writer) acknowledge(id string, events []session.Event) error {
	return w.ledger.acknowledge(id, events)
}

func digest(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// lastTurn is the highest turn number a turn/start of log carries.
func lastTurn(log []session.Event) int64 {
	var last int64
	for _, e := range log {
		if e.Type != session.TypeTurnStart {
			continue
		}
		var d struct{ Turn int64 }
		if json.Unmarshal(e.Data, &d) == nil && d.Turn > last {
			last = d.Turn
		}
	}
	return last
}

var vocabulary = strings.Fields("alpha beta gamma delta crash kill ledger fsync append turn step seq δ 😀 \u202e quote\" back\\slash")

func randomWords(r *rand.Rand, n int) string {
	w := make([]string, n)
	for i := range w {
		w[i] = vocabulary[r.IntN(len(vocabulary))]
	}
	return strings.Join(w, " ")
}

// randomTurn is a completed turn number turn from seq from: a user message
// and one to four steps with assistant messages of random length.
func randomTurn(r *rand.Rand, from, turn int64) []session.Event {
	var out []session.Event
	add := func(typ, data string) {
		e := session.Event{Type: typ, Seq: from + int64(len(out)), Time: crashCreatedAt + from + int64(len(out)), Data: json.RawMessage(data)}
		if typ == session.TypeUserMessage || typ == session.TypeAssistantMsg {
			e.SurfaceOp = json.RawMessage(`"append"`)
		}
		out = append(out, e)
	}
	t := strconv.FormatInt(turn, 10)
	add(session.TypeTurnStart, `{"turn":`+t+`}`)
	steps := 1 + r.IntN(4)
	for step := 1; step <= steps; step++ {
		s := strconv.Itoa(step)
		add(session.TypeStepStart, `{"turn":`+t+`,"step":`+s+`}`)
		if step == 1 {
			add(session.TypeUserMessage, `{"content":[{"type":"text","text":`+jsjson.String(randomWords(r, 1+r.IntN(20)))+
				`}],"source":{"kind":"user"},"role":"user","id":"u-`+t+`"}`)
		}
		add(session.TypeAssistantMsg, `{"turn":`+t+`,"step":`+s+`,"message":{"role":"assistant","content":[{"type":"text","text":`+
			jsjson.String(randomWords(r, 1+r.IntN(200)))+`}],"source":{"kind":"model","provider":"echo","model":"echo"},"id":"a-`+t+`-`+s+`"}}`)
		add(session.TypeStepEnd, `{"turn":`+t+`,"step":`+s+`}`)
	}
	add(session.TypeTurnEnd, `{"turn":`+t+`,"reason":{"kind":"completed"}}`)
	return out
}

// crashStats is what the crash test counts.
type crashStats struct {
	kills, rootRepairs, childRepairs, acked, tornRecords int
}

// TestTortureCrash kills the crash writer with SIGKILL at random points,
// DSH_TORTURE_KILLS times (default 25), and after every kill checks that
// every session still inspects, that no acknowledged event is lost or
// changed, that dsh list and dsh diagnose succeed (no error findings), and
// that the repairing load (root) and resume (children) close what the kill
// left open and keep every acknowledged event.
func TestTortureCrash(t *testing.T) {
	requireTorture(t)
	kills := envInt(t, "DSH_TORTURE_KILLS", 25)
	seed := uint64(envInt(t, "DSH_TORTURE_SEED", 1))
	bin := dshBinary(t)
	ctx := context.Background()
	dir := t.TempDir()
	db := filepath.Join(dir, "crash.db")
	ledger := filepath.Join(dir, "ledger")

	st, err := sqlitepersist.Open(ctx, db, sqlitepersist.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cwd := "/work"
	if err := st.CreateSession(ctx, session.Header{ID: crashRoot, CreatedAt: crashCreatedAt, Cwd: &cwd}, nil); err != nil {
		t.Fatal(err)
	}
	rt := &subagent.Runtime{Store: st, LeaseTTL: crashLeaseTTL, Heartbeat: crashHeartbeat}
	r := rand.New(rand.NewPCG(seed, 7))
	var stats crashStats
	for i := range kills {
		if err := killWriter(t, db, ledger, seed*100000+uint64(i), time.Duration(r.IntN(crashMaxDelayMs))*time.Millisecond); err != nil {
			t.Fatalf("kill %d: %v", i+1, err)
		}
		if err := checkAfterKill(ctx, t, st, rt, bin, db, ledger, &stats); err != nil {
			t.Fatalf("after kill %d: %v", i+1, err)
		}
		stats.kills++
	}
	t.Logf("crash: %d kills survived; %d root logs repaired by load, %d children repaired by resume; %d acknowledged events checked after the last kill; %d torn ledger records skipped",
		stats.kills, stats.rootRepairs, stats.childRepairs, stats.acked, stats.tornRecords)
}

// killWriter starts the crash writer and kills it with SIGKILL after delay.
func killWriter(t *testing.T, db, ledger string, seed uint64, delay time.Duration) error {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), roleEnv+"="+crashWriterRole, "DSH_TORTURE_DB="+db, "DSH_TORTURE_LEDGER="+ledger,
		"DSH_TORTURE_SEED="+strconv.FormatUint(seed, 10))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		return fmt.Errorf("the writer exited on its own (%v): %s", err, stderr.String())
	case <-time.After(delay):
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return err
	}
	err := <-exited
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		return fmt.Errorf("the writer was not killed: %v", err)
	}
	if ws, ok := exit.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
		return fmt.Errorf("the writer exited before the kill (%v): %s", err, stderr.String())
	}
	return nil
}

// verifyLedger checks that in's log holds every acknowledged event of its
// session unchanged.
func verifyLedger(id string, in *backend.Inspection, acked map[int64]ledgerEntry) error {
	bySeq := make(map[int64]session.Event, len(in.Events))
	for _, e := range in.Events {
		bySeq[e.Seq] = e
	}
	for seq, want := range acked {
		e, ok := bySeq[seq]
		if !ok {
			return fmt.Errorf("session %q lost acknowledged event seq %d (%s)", id, seq, want.typ)
		}
		if e.Type != want.typ || digest(e.Data) != want.digest {
			return fmt.Errorf("session %q changed acknowledged event seq %d: %s %s, acknowledged %s %s", id, seq, e.Type, digest(e.Data), want.typ, want.digest)
		}
	}
	return nil
}

func needsRepair(in *backend.Inspection) bool { return in.Torn != nil || len(in.Closers) > 0 }

func checkAfterKill(ctx context.Context, t *testing.T, st *sqlitepersist.Store, rt *subagent.Runtime, bin, db, ledgerPath string, stats *crashStats) error {
	t.Helper()
	l, err := readLedger(ledgerPath)
	if err != nil {
		return err
	}
	// Each kill cuts at most the record its writer was writing.
	if l.torn > stats.kills+1 || l.writers > stats.kills+1 {
		return fmt.Errorf("ledger: %d torn records and %d writers after %d kills", l.torn, l.writers, stats.kills+1)
	}
	acked := l.acked
	stats.acked, stats.tornRecords = l.events, l.torn
	ids := []string{crashRoot}
	err = st.ChildrenOf(ctx, crashRoot, func(h session.Header) error {
		ids = append(ids, h.ID)
		return nil
	})
	if err != nil {
		return err
	}
	for id := range acked {
		if _, err := st.Header(ctx, id); err != nil {
			return fmt.Errorf("acknowledged session %q: %w", id, err)
		}
	}
	damaged := map[string]bool{}
	for _, id := range ids {
		in, err := st.Inspect(ctx, id)
		if err != nil {
			return fmt.Errorf("inspect %q: %w", id, err)
		}
		if err := verifyLedger(id, in, acked[id]); err != nil {
			return err
		}
		damaged[id] = needsRepair(in)
	}

	if res, err := runDsh(ctx, bin, db, "list", "--parent", crashRoot, "-o", "json"); err != nil || res.code != 0 {
		return fmt.Errorf("dsh list: %v %v", err, res)
	}
	if res, err := runDsh(ctx, bin, db, "diagnose", "--parent", crashRoot, "-o", "jsonl", "--quiet"); err != nil || res.code != 0 {
		return fmt.Errorf("dsh diagnose: %v %v", err, res)
	}

	for _, id := range ids {
		if !damaged[id] {
			continue
		}
		if id == crashRoot {
			if _, err := st.Load(ctx, id); err != nil {
				return fmt.Errorf("load %q: %w", id, err)
			}
			stats.rootRepairs++
		} else {
			if err := resumeWhenFree(ctx, rt, id); err != nil {
				return err
			}
			stats.childRepairs++
		}
		in, err := st.Inspect(ctx, id)
		if err != nil {
			return fmt.Errorf("inspect %q after repair: %w", id, err)
		}
		if needsRepair(in) {
			return fmt.Errorf("session %q still needs repair after it: torn %+v, %d closers", id, in.Torn, len(in.Closers))
		}
		if err := verifyLedger(id, in, acked[id]); err != nil {
			return fmt.Errorf("after repair: %w", err)
		}
	}
	return nil
}

// resumeWhenFree resumes child id once the killed writer's lease lapses:
// the resume repairs the interrupted turn and runs a new one.
func resumeWhenFree(ctx context.Context, rt *subagent.Runtime, id string) error {
	deadline := time.Now().Add(10 * crashLeaseTTL)
	for {
		res, err := rt.Resume(ctx, subagent.ResumeRequest{Child: id, Parent: crashRoot, Message: "after the crash"})
		if dsherr.CodeOf(err) == dsherr.NotDelivered && time.Now().Before(deadline) {
			time.Sleep(crashLeaseTTL / 5)
			continue
		}
		if err != nil {
			return fmt.Errorf("resume %q: %w", id, err)
		}
		if res.Outcome.Kind != subagent.OutcomeCompleted {
			return fmt.Errorf("resume %q: the turn ended %q", id, res.Outcome.Kind)
		}
		return nil
	}
}
