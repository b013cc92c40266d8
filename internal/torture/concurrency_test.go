package torture

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/sqlitepersist"
)

// concRoot is the parent every process works on.
const concRoot = "root"

// concurrency is the shared bookkeeping of the concurrency test's workers.
type concurrency struct {
	bin, db, locks string
	exec           string

	mu       sync.Mutex
	children []string
	resumes  map[string]int // acknowledged (exit 0) resumes per child
	dupWins  map[string]int // successful starts per contested id
	runs     map[string]int // dsh processes run and refusals, per kind
	failures []string
}

func (c *concurrency) fail(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.failures = append(c.failures, fmt.Sprintf(format, args...))
}

func (c *concurrency) count(action string) {
	c.mu.Lock()
	c.runs[action]++
	c.mu.Unlock()
}

// TestTortureConcurrency runs DSH_TORTURE_PROCS workers (default 4, 2–16)
// for DSH_TORTURE_DURATION (default 5s), each running one dsh process after
// another on the same parent: starts (some contesting one id), resumes of
// random children, listings and diagnoses. Turns run an exec provider that
// marks the child active in a lock directory, so two overlapping activations
// of one child are caught. Invariants: every process ends as it may (a
// resume of a held child is NOT_DELIVERED, a contested id is started once);
// no listing shows a diagnostic row and no diagnosis reports any finding —
// in particular no turn without an end and without a live holder, which
// is a half-written turn seen as committed; at the end every child's log is
// contiguous and balanced with exactly one turn per acknowledged activation,
// and no lease is left.
func TestTortureConcurrency(t *testing.T) {
	requireTorture(t)
	procs := envInt(t, "DSH_TORTURE_PROCS", 4)
	if procs < 2 || procs > 16 {
		t.Fatalf("DSH_TORTURE_PROCS=%d: want 2 to 16", procs)
	}
	duration := envDuration(t, "DSH_TORTURE_DURATION", 5*time.Second)
	ctx := context.Background()
	dir := t.TempDir()
	c := &concurrency{
		bin:     dshBinary(t),
		db:      filepath.Join(dir, "conc.db"),
		locks:   filepath.Join(dir, "active"),
		resumes: map[string]int{},
		dupWins: map[string]int{},
		runs:    map[string]int{},
	}
	if err := os.Mkdir(c.locks, 0o700); err != nil {
		t.Fatal(err)
	}
	// The turn: claim the child (mkdir is atomic), hold it a little, release.
	c.exec = fmt.Sprintf(`id=$(cat); if ! mkdir %[1]q/"$id" 2>/dev/null; then echo "$id" >> %[1]q/violations; fi; sleep 0.05; rmdir %[1]q/"$id" 2>/dev/null; echo done`, c.locks)

	if res, err := runDsh(ctx, c.bin, c.db, "session", "new", "--id", concRoot, "--cwd", dir); err != nil || res.code != 0 {
		t.Fatalf("session new: %v %v", err, res)
	}
	for i := range 3 {
		id := fmt.Sprintf("seed-%d", i)
		if !c.start(ctx, id, false) {
			t.Fatalf("starting %s failed: %v", id, c.failures)
		}
	}

	deadline := time.Now().Add(duration)
	var wg sync.WaitGroup
	for w := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.work(ctx, w, deadline)
		}()
	}
	wg.Wait()
	for _, f := range c.failures {
		t.Error(f)
	}
	if t.Failed() {
		return
	}
	if v, err := os.ReadFile(filepath.Join(c.locks, "violations")); err == nil {
		t.Fatalf("overlapping activations of: %s", strings.Join(strings.Fields(string(v)), ", "))
	}
	c.checkFinal(ctx, t)
	t.Logf("concurrency: %d workers for %s ran %d dsh processes (%d start, %d resume, %d list, %d diagnose); "+
		"%d resumes refused as held, %d starts refused as duplicate; %d children, %d acknowledged resumes",
		procs, duration, c.runs["start"]+c.runs["resume"]+c.runs["list"]+c.runs["diagnose"],
		c.runs["start"], c.runs["resume"], c.runs["list"], c.runs["diagnose"],
		c.runs["resume refused as held"], c.runs["start refused as duplicate"], len(c.children), sum(c.resumes))
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// work runs one dsh process after another until deadline.
func (c *concurrency) work(ctx context.Context, w int, deadline time.Time) {
	r := rand.New(rand.NewPCG(uint64(w), 11))
	for n := 0; time.Now().Before(deadline); n++ {
		switch p := r.IntN(20); {
		case p < 8:
			// Mostly the three seed children, so that resumes collide.
			c.mu.Lock()
			pool := len(c.children)
			if r.IntN(10) < 7 {
				pool = 3
			}
			id := c.children[r.IntN(pool)]
			c.mu.Unlock()
			c.resume(ctx, id)
		case p < 10:
			c.start(ctx, fmt.Sprintf("w%d-%d", w, n), false)
		case p < 11:
			c.start(ctx, fmt.Sprintf("dup-%d", r.IntN(4)), true)
		case p < 15:
			c.list(ctx)
		default:
			c.diagnose(ctx)
		}
	}
}

func (c *concurrency) start(ctx context.Context, id string, contested bool) bool {
	c.count("start")
	res, err := runDsh(ctx, c.bin, c.db, "start", "--parent", concRoot, "--id", id, "--label", "label "+id,
		"--message", id, "--exec", c.exec)
	switch {
	case err != nil:
		c.fail("start %s: %v", id, err)
	case res.code == 0:
		c.mu.Lock()
		c.children = append(c.children, id)
		if contested {
			c.dupWins[id]++
		}
		c.mu.Unlock()
		return true
	case contested && res.code == 2 && strings.Contains(res.stderr, "DUPLICATE_CHILD"):
		c.count("start refused as duplicate")
	default:
		c.fail("start %s: %v", id, res)
	}
	return false
}

func (c *concurrency) resume(ctx context.Context, id string) {
	c.count("resume")
	res, err := runDsh(ctx, c.bin, c.db, "resume", id, "--parent", concRoot, "--message", id, "--exec", c.exec)
	switch {
	case err != nil:
		c.fail("resume %s: %v", id, err)
	case res.code == 0:
		c.mu.Lock()
		c.resumes[id]++
		c.mu.Unlock()
	case res.code == 4 && strings.Contains(res.stderr, "NOT_DELIVERED"):
		c.count("resume refused as held")
	default:
		c.fail("resume %s: %v", id, res)
	}
}

func (c *concurrency) list(ctx context.Context) {
	c.count("list")
	res, err := runDsh(ctx, c.bin, c.db, "list", "--parent", concRoot, "-o", "jsonl")
	switch {
	case err != nil:
		c.fail("list: %v", err)
	case res.code != 0:
		c.fail("list: %v", res)
	case strings.Contains(res.stdout, `"kind":"diagnostic"`):
		c.fail("list shows a diagnostic row: %s", res.stdout)
	}
}

func (c *concurrency) diagnose(ctx context.Context) {
	c.count("diagnose")
	res, err := runDsh(ctx, c.bin, c.db, "diagnose", "--parent", concRoot, "--fail-on", "info", "--quiet", "-o", "jsonl")
	switch {
	case err != nil:
		c.fail("diagnose: %v", err)
	case res.code != 0:
		c.fail("diagnose reports findings on a corpus nobody crashed: %v", res)
	}
}

// checkFinal checks every child's log once all processes have ended.
func (c *concurrency) checkFinal(ctx context.Context, t *testing.T) {
	for id, wins := range c.dupWins {
		if wins != 1 {
			t.Errorf("contested id %s was started %d times", id, wins)
		}
	}
	st, err := sqlitepersist.OpenReadOnly(ctx, c.db, sqlitepersist.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	leases, err := st.Leases(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(leases) != 0 {
		t.Errorf("%d leases left after every process ended: %+v", len(leases), leases)
	}
	for _, id := range c.children {
		in, err := st.Inspect(ctx, id)
		if err != nil {
			t.Errorf("inspect %s: %v", id, err)
			continue
		}
		if needsRepair(in) {
			t.Errorf("child %s: torn %+v, %d closers pending", id, in.Torn, len(in.Closers))
		}
		turns := 0
		for i, e := range in.Events {
			if e.Seq != int64(i) {
				t.Errorf("child %s: event %d has seq %d: the log is not contiguous", id, i, e.Seq)
				break
			}
			if e.Type == session.TypeTurnEnd {
				turns++
			}
		}
		if want := 1 + c.resumes[id]; turns != want {
			t.Errorf("child %s has %d turns, want %d (its start and %d acknowledged resumes)", id, turns, want, c.resumes[id])
		}
	}
	if res, err := runDsh(ctx, c.bin, c.db, "diagnose", "--parent", concRoot, "--fail-on", "info", "--quiet", "-o", "jsonl"); err != nil || res.code != 0 {
		t.Errorf("final diagnose: %v %v", err, res)
	}
}
