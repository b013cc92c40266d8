package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/dsh-project/dsh/internal/sqlitepersist"
)

// chromiumPath is the headless browser the page test drives: Debian's
// chromium package (what .ci/run installs), or one on PATH.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no Chromium (/usr/bin/chromium): CI must install the chromium package (.ci/run does)")
	}
	t.Skip("no Chromium installed (apt-get install chromium): the browser test of dsh serve's page is skipped")
	return ""
}

// testOutputDir is where the test leaves its screenshots: $TEST_OUTPUT
// when set, the test's temporary directory otherwise.
func testOutputDir(t *testing.T) string {
	if d := os.Getenv("TEST_OUTPUT"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}

// newBrowser starts headless Chromium with a fresh profile and the flags
// that keep it from reaching for the network (the machine may have none,
// and Chromium then stalls).
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.UserDataDir(t.TempDir()),
		// Chromium puts its singleton socket in a directory of its own
		// under TMPDIR and leaves it there when it is killed, as the
		// test's end kills it: that directory goes with the test's own.
		chromedp.Env("TMPDIR=" + t.TempDir()),
		chromedp.WindowSize(1280, 1000),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	// The first Run starts the browser; it must not carry a timeout.
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	return ctx
}

// pageRow is one tree row as the browser sees it.
type pageRow struct {
	ID, Parent, Depth, State, Badge, Mode, Label, Kids, Host, PID string
	NestedIn, Tokens, UsageNote                                   string
}

const readRows = `Array.from(document.querySelectorAll("li.row")).map(li => {
	const line = li.querySelector(":scope > .line");
	const text = sel => { const e = line.querySelector(sel); return e ? e.textContent : ""; };
	const up = li.parentElement.closest("li.row");
	return {ID: li.dataset.id, Parent: li.dataset.parent, Depth: li.dataset.depth, State: li.dataset.state,
		Badge: text(".badge"), Mode: text(".mode"), Label: text(".label"), Kids: text(".kids"),
		Host: text(".holder .host"), PID: text(".holder .pid"), NestedIn: up ? up.dataset.id : "",
		Tokens: text(".tokens"), UsageNote: text(".usage-note")};
})`

// TestServePageInBrowser opens dsh serve's pages in headless Chromium: the
// tree's rows, nesting, badges and holders; a child link followed; a child
// started by another process appearing through the event stream, running
// with its holder, then inactive; hostile ids and labels shown as text,
// running no script. Screenshots go to the test's output directory.
func TestServePageInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a browser (a few seconds)")
	}
	ctx := newBrowser(t)
	home := isolateEnv(t)
	db := filepath.Join(home, "dsh.db")
	t.Setenv("DSH_DB", db)
	serveCorpus(t)
	s := startServe(t)
	out := testOutputDir(t)
	run := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		tctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		if err := chromedp.Do(tctx, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	rows := func() map[string]pageRow {
		t.Helper()
		tctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		list, err := chromedp.Run(tctx, chromedp.Evaluate[[]pageRow](readRows))
		if err != nil {
			t.Fatalf("read rows: %v", err)
		}
		byID := map[string]pageRow{}
		for _, r := range list {
			byID[r.ID] = r
		}
		return byID
	}
	screenshot := func(name string) {
		t.Helper()
		tctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		png, err := chromedp.Run(tctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot: %v", err)
		}
		if err := os.WriteFile(filepath.Join(out, name), png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot %s", filepath.Join(out, name))
	}

	run("open the parent's page", chromedp.Navigate(s.url+"sessions/demo-parent"), chromedp.WaitVisible(chromedp.CSS("ul.tree")))
	got := rows()
	hostile := `<script>window.pwned=1</script>`
	for id, want := range map[string]pageRow{
		"demo-continuable": {Depth: "1", State: "inactive", Badge: "inactive", Mode: "continuable", Label: "summarize the design notes", Kids: "1 child row(s)"},
		"demo-grandchild":  {Depth: "2", State: "inactive", Badge: "inactive", Mode: "continuable", NestedIn: "demo-continuable"},
		"demo-one-shot":    {Depth: "1", State: "inactive", Badge: "inactive", Mode: "one-shot"},
		"demo-broken":      {Depth: "1", State: "corrupt", Badge: "corrupt"},
		"tree-a":           {Depth: "1", Badge: "inactive", Kids: "2 child row(s)"},
		"a/b":              {Depth: "2", NestedIn: "tree-a", Label: "slash"},
		"..":               {Depth: "3", NestedIn: "a/b", Label: "dots"},
		"tree-b":           {Depth: "2", NestedIn: "tree-a"},
		"tree-c":           {Depth: "3", NestedIn: "tree-b", Label: "level three"},
		hostile:            {Depth: "1", Label: `<img src=x onerror="window.pwned=1">`},
		"quote\"'&amp;":    {Depth: "1", Mode: "one-shot", Label: `bidi \u202eevil\u202c text`},
		// Each row's tokens: its subtree's input and output.
		"u-kid":           {Depth: "1", Tokens: "1200 in / 34 out"},
		serveUsageHostile: {Depth: "1", Tokens: "56 in / 8 out", UsageNote: "torn from seq 2, prefix counted"},
	} {
		r, ok := got[id]
		if !ok {
			t.Errorf("no row %q on the page (rows: %v)", id, keys(got))
			continue
		}
		for field, pair := range map[string][2]string{
			"depth": {r.Depth, want.Depth}, "state": {r.State, want.State}, "badge": {r.Badge, want.Badge}, "mode": {r.Mode, want.Mode},
			"label": {r.Label, want.Label}, "children": {r.Kids, want.Kids}, "nested in": {r.NestedIn, want.NestedIn},
			"tokens": {r.Tokens, want.Tokens}, "usage note": {r.UsageNote, want.UsageNote},
		} {
			if pair[1] != "" && pair[0] != pair[1] {
				t.Errorf("row %q: %s %q, want %q", id, field, pair[0], pair[1])
			}
		}
	}
	// The parent's own tokens and its subtree's, as dsh usage --parent
	// counts them.
	totals, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]string](`Object.fromEntries(Array.from(document.querySelectorAll("table.usage tbody tr")).flatMap(tr =>
		Array.from(tr.querySelectorAll("td")).map(td => [tr.className + " " + td.className, td.textContent])))`))
	if err != nil {
		t.Fatal(err)
	}
	for cell, want := range map[string]string{
		"own messages": "0", "own input": "0", "own output": "0",
		"subtree messages": "2", "subtree input": "1256", "subtree output": "42", "subtree cache-read": "500", "subtree reasoning": "7",
	} {
		if totals[cell] != want {
			t.Errorf("usage table %s: %q, want %q (table: %v)", cell, totals[cell], want, totals)
		}
	}
	if r := got["demo-continuable"]; r.NestedIn != "" {
		t.Errorf("a child of the parent is nested in %q", r.NestedIn)
	}
	pwned := func() bool {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`typeof window.pwned !== "undefined"`))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if pwned() {
		t.Error("a hostile id or label ran script on the parent's page")
	}
	screenshot("parent.png")

	// Follow a child's link: its own page, with the child's header.
	run("follow tree-a", chromedp.Click(chromedp.CSS(`a.child[href="/sessions/tree-a"]`)), chromedp.WaitVisible(chromedp.CSS(`li.row[data-id="tree-b"]`)))
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil || !strings.HasSuffix(loc, "/sessions/tree-a") {
		t.Errorf("after the click: %q %v", loc, err)
	}
	// The hostile child's own page shows its id as text, and runs nothing.
	run("open the hostile child", chromedp.Navigate(s.url+"sessions/%3Cscript%3Ewindow.pwned=1%3C%2Fscript%3E"), chromedp.WaitVisible(chromedp.CSS("h1 .id")))
	title, err := chromedp.Run(ctx, chromedp.TextContent(chromedp.CSS("h1 .id")))
	if err != nil || title != hostile {
		t.Errorf("hostile page title %q %v", title, err)
	}
	if pwned() {
		t.Error("a hostile id ran script on its own page")
	}

	// Live: back on the parent's page, a child started by another process
	// appears through the event stream, without a reload.
	run("reopen the parent's page", chromedp.Navigate(s.url+"sessions/demo-parent"), chromedp.WaitVisible(chromedp.CSS("#live-status.on")),
		chromedp.Evaluate[chromedp.Void](`window.sameDocument = true`))
	st, err := sqlitepersist.OpenReadOnly(context.Background(), db, sqlitepersist.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	start := exec.Command("dsh", "--db", db, "start", "--parent", "demo-parent", "--id", "live-child", "--label", "started elsewhere", "--message", "go", "--exec", "sleep 4; cat")
	start.Env = append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir())
	var startErr bytes.Buffer
	start.Stderr = &startErr
	if err := start.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = start.Wait() }()
	// The row's latency is measured from the moment the child's session is
	// in the store (a reader sees it), not from the process's launch.
	var stored, shown time.Time
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) && shown.IsZero() {
		if stored.IsZero() {
			if _, err := st.Header(context.Background(), "live-child"); err == nil {
				stored = time.Now()
			}
		}
		present, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`!!document.querySelector('li.row[data-id="live-child"]')`))
		if err != nil {
			t.Fatal(err)
		}
		if present {
			shown = time.Now()
			if stored.IsZero() {
				stored = shown
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	if shown.IsZero() {
		t.Fatalf("the started child never appeared on the page (start: %s)", startErr.String())
	}
	latency := shown.Sub(stored)
	t.Logf("a child started in another process appeared %v after it was stored", latency.Round(time.Millisecond))
	if latency > time.Second {
		t.Errorf("the started child appeared %v after it was stored; want within a second", latency)
	}
	// While its turn runs it is running, with its holder.
	run("wait for the running row", chromedp.WaitVisible(chromedp.CSS(`li.row[data-id="live-child"][data-state="running"] .holder`)))
	r := rows()["live-child"]
	host, _ := os.Hostname()
	if r.Badge != "running" || r.Label != "started elsewhere" || r.Host != host || r.PID != fmt.Sprint(start.Process.Pid) {
		t.Errorf("running row %+v; want holder %s pid %d", r, host, start.Process.Pid)
	}
	screenshot("running.png")
	// The turn ends: the row turns inactive and loses its holder.
	run("wait for the inactive row", chromedp.WaitVisible(chromedp.CSS(`li.row[data-id="live-child"][data-state="inactive"]`)))
	if r := rows()["live-child"]; r.Host != "" {
		t.Errorf("inactive row still has a holder: %+v", r)
	}
	same, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.sameDocument === true`))
	if err != nil || !same {
		t.Errorf("the page reloaded instead of updating (%v)", err)
	}
	if pwned() {
		t.Error("a live update ran script")
	}
	if err := start.Wait(); err != nil {
		t.Errorf("dsh start: %v: %s", err, startErr.String())
	}

	// The audit page and the root page render, and the filter works
	// without script.
	run("open the audit page", chromedp.Navigate(s.url+"diagnose"), chromedp.WaitVisible(chromedp.CSS("section.summary")))
	text, err := chromedp.Run(ctx, chromedp.TextContent(chromedp.CSS("section.findings")))
	if err != nil || !strings.Contains(text, "DESCRIPTOR_MALFORMED") || !strings.Contains(text, "demo-broken") {
		t.Errorf("audit page findings: %q %v", text, err)
	}
	run("filter the roots", chromedp.Navigate(s.url), chromedp.SetValue(chromedp.CSS(`input[name="q"]`), "demo"),
		chromedp.Submit(chromedp.CSS(`form.filter`)), chromedp.WaitVisible(chromedp.CSS(`tr[data-id="demo-parent"]`)))
	screenshot("roots.png")

	// Search: a query typed into the header's box lists the hits, each
	// snippet's text shown as it is (markup, quotes, the « » it holds)
	// with only the matching words marked, each linking to its session.
	run("search from the header", chromedp.Navigate(s.url+"sessions/demo-parent"),
		chromedp.SendKeys(chromedp.CSS(`form.search-box input[name="q"]`), "bold OR script"+kb.Enter),
		chromedp.WaitVisible(chromedp.CSS("table.hits")))
	hits := readHits(t, ctx)
	for _, want := range []pageHit{
		{Session: "u-kid", Href: "/sessions/u-kid", Seq: "1", Type: "assistant/message", Time: "1970-01-01T00:00:00.006Z",
			Snippet: `ok: <b>bold</b> & "quoted" «not a mark» 5<6`, Marks: []string{"bold"}},
		{Session: serveUsageHostile, Href: "/sessions/u%3Cb%3E%22tok", Seq: "1", Type: "assistant/message", Time: "1970-01-01T00:00:00.007Z",
			Snippet: `ok <script>window.pwned=1</script> bold`, Marks: []string{"script", "script", "bold"}},
	} {
		if !slices.ContainsFunc(hits, func(h pageHit) bool { return reflect.DeepEqual(h, want) }) {
			t.Errorf("no hit %+v on the page (hits: %+v)", want, hits)
		}
	}
	if len(hits) != 2 {
		t.Errorf("%d hits, want 2: %+v", len(hits), hits)
	}
	if pwned() {
		t.Error("a snippet ran script on the search page")
	}
	screenshot("search.png")
	run("follow a hit", chromedp.Click(chromedp.CSS(`table.hits a.session[href="/sessions/u%3Cb%3E%22tok"]`)), chromedp.WaitVisible(chromedp.CSS("h1 .id")))
	if title, err := chromedp.Run(ctx, chromedp.TextContent(chromedp.CSS("h1 .id"))); err != nil || title != serveUsageHostile {
		t.Errorf("the hit's link led to %q (%v)", title, err)
	}
	// The subtree box on a session's page searches below it only; the
	// search page's own form narrows by type.
	run("search a subtree", chromedp.Navigate(s.url+"sessions/tree-a"),
		chromedp.SendKeys(chromedp.CSS(`form.search-subtree input[name="q"]`), "a OR b OR s OR d OR ok"+kb.Enter),
		chromedp.WaitVisible(chromedp.CSS("table.hits")))
	for _, h := range readHits(t, ctx) {
		if !slices.Contains([]string{"tree-a", "tree-b", "tree-c", "a/b", ".."}, h.Session) {
			t.Errorf("a hit of tree-a's subtree search in %q", h.Session)
		}
	}
	// The click checks the box on the page being left at once: the old
	// document is marked so that only the answer's own box is waited for
	// (a loaded machine would otherwise read the old page's hits).
	run("narrow by type", chromedp.Click(chromedp.CSS(`form.search input[value="user/message"]`)),
		chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			_, err := chromedp.Evaluate[bool](`document.body.dataset.left = "1", true`)(ctx, t)
			return err
		}), chromedp.Submit(chromedp.CSS(`form.search`)),
		chromedp.WaitVisible(chromedp.CSS(`body:not([data-left]) form.search input[value="user/message"]:checked`)))
	typed := readHits(t, ctx)
	if len(typed) == 0 {
		t.Error("no user/message hit below tree-a")
	}
	for _, h := range typed {
		if h.Type != "user/message" {
			t.Errorf("a %s hit with type=user/message", h.Type)
		}
	}
	// A malformed query: the form again, the CLI's message shown.
	run("a malformed query", chromedp.Navigate(s.url+"search"),
		chromedp.SendKeys(chromedp.CSS(`form.search input[name="q"]`), `"unclosed`+kb.Enter),
		chromedp.WaitVisible(chromedp.CSS("p.error")))
	if text, err := chromedp.Run(ctx, chromedp.TextContent(chromedp.CSS("p.error"))); err != nil || text != "search query: the phrase opened at column 1 has no closing quote" {
		t.Errorf("malformed query: %q %v", text, err)
	}
}

// pageHit is one search hit as the browser sees it.
type pageHit struct {
	Session, Href, Seq, Time, Type, Snippet string
	Marks                                   []string
}

func readHits(t *testing.T, ctx context.Context) []pageHit {
	t.Helper()
	tctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	hits, err := chromedp.Run(tctx, chromedp.Evaluate[[]pageHit](`Array.from(document.querySelectorAll("table.hits tr.hit")).map(tr => {
		const a = tr.querySelector("a.session"), text = sel => tr.querySelector(sel).textContent;
		return {Session: a.textContent, Href: a.getAttribute("href"), Seq: text(".seq"), Time: text(".time"), Type: text(".type"),
			Snippet: text(".snippet"), Marks: Array.from(tr.querySelectorAll(".snippet mark")).map(m => m.textContent)};
	})`))
	if err != nil {
		t.Fatalf("read hits: %v", err)
	}
	return hits
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
