package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-project/dsh/internal/location"
	"github.com/dsh-project/dsh/internal/pgtest"
)

// served is a dsh serve running in-process for a test.
type served struct {
	url  string
	stop func() (code int, stderr string)
}

// startServe runs `dsh serve --listen 127.0.0.1:0 args…` in-process until
// the test ends (or stop is called) and returns the address it printed.
func startServe(t *testing.T, args ...string) served {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	var stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		code := run(ctx, append([]string{"serve", "--listen", "127.0.0.1:0"}, args...), strings.NewReader(""), pw, &stderr, time.Now)
		pw.Close()
		done <- code
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	go io.Copy(io.Discard, pr)
	if err != nil {
		cancel()
		t.Fatalf("dsh serve printed no address (exit %d): %s", <-done, stderr.String())
	}
	stopped := false
	var code int
	stop := func() (int, string) {
		if !stopped {
			stopped = true
			cancel()
			code = <-done
		}
		return code, stderr.String()
	}
	t.Cleanup(func() { stop() })
	return served{url: strings.TrimSpace(line), stop: stop}
}

// get fetches path from the server and returns the status and body.
func (s served) get(t *testing.T, path string, header ...string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, strings.TrimSuffix(s.url, "/")+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] == "Host" {
			req.Host = header[i+1]
			continue
		}
		req.Header.Set(header[i], header[i+1])
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

// serveCorpus fills the database with the demo catalog, a nested tree and
// children whose ids and labels are hostile to a page (markup, quotes,
// bidirectional controls).
func serveCorpus(t *testing.T) {
	t.Helper()
	if _, stderr, code := runDsh(t, "demo"); code != 0 {
		t.Fatalf("demo: exit %d: %s", code, stderr)
	}
	for _, args := range [][]string{
		{"start", "--parent", "demo-parent", "--id", "tree-a", "--label", "level one", "--message", "a"},
		{"start", "--parent", "tree-a", "--id", "tree-b", "--label", "level two", "--message", "b", "--max-depth", "5"},
		{"start", "--parent", "tree-b", "--id", "tree-c", "--label", "level three", "--message", "c", "--max-depth", "5"},
		{"start", "--parent", "demo-parent", "--id", `<script>window.pwned=1</script>`, "--label", `<img src=x onerror="window.pwned=1">`, "--message", "x"},
		{"start", "--parent", "demo-parent", "--id", "quote\"'&amp;", "--label", "bidi \u202eevil\u202c text", "--message", "y", "--mode", "one-shot"},
		// Ids a path would split or resolve.
		{"start", "--parent", "tree-a", "--id", "a/b", "--label", "slash", "--message", "s", "--max-depth", "5"},
		{"start", "--parent", "a/b", "--id", "..", "--label", "dots", "--message", "d", "--max-depth", "5"},
	} {
		if _, stderr, code := runDsh(t, args...); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
	}
	// Children that used tokens: one that counts whole, one with a
	// hostile id and a torn tail (its prefix counted).
	dir := t.TempDir()
	for name, log := range map[string]string{"u-kid.jsonl": serveUsageKid, "u-tok.jsonl": serveUsageTok} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(log), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, stderr, code := runDsh(t, "import", "jsonl:"+dir, "--quiet"); code != 0 {
		t.Fatalf("import the usage children: exit %d: %s", code, stderr)
	}
}

// serveUsageHostile is the id of a child with usage, hostile to a page.
const serveUsageHostile = `u<b>"tok`

const serveUsageKid = `{"type":"session","version":0,"id":"u-kid","createdAt":5,"cwd":"/work","parentSession":"demo-parent","origin":"subagent","delegationDepth":1}
{"type":"subagent/descriptor","seq":0,"time":5,"data":{"version":2,"mode":"continuable","provider":"spawn","label":"counts tokens"}}
{"type":"assistant/message","seq":1,"time":6,"data":{"turn":1,"step":1,"message":{"role":"assistant","content":[{"type":"text","text":"ok: <b>bold</b> & \"quoted\" «not a mark» 5<6"}],"source":{"kind":"model","provider":"deepseek-official","model":"m-big"},"id":"k1"},"usage":{"inputTokens":1200,"outputTokens":34,"cacheReadTokens":500,"reasoningTokens":7}}}
`

const serveUsageTok = `{"type":"session","version":0,"id":"u<b>\"tok","createdAt":6,"cwd":"/work","parentSession":"demo-parent","origin":"subagent","delegationDepth":1}
{"type":"subagent/descriptor","seq":0,"time":6,"data":{"version":2,"mode":"one-shot","provider":"spawn","label":"torn"}}
{"type":"assistant/message","seq":1,"time":7,"data":{"turn":1,"step":1,"message":{"role":"assistant","content":[{"type":"text","text":"ok <script>window.pwned=1</script> bold"}],"source":{"kind":"model","provider":"deepseek-official","model":"m-small"},"id":"k2"},"usage":{"inputTokens":56,"outputTokens":8}}}
{"type":"assistant/message","seq":2,"time":8,"data":{"turn":1,"step":2,"usage":{"inputTokens":1000
`

// serveProfiles are the --dsh-compat profiles every API answer is checked
// under.
var serveProfiles = []string{"seeds", "0.1.0-rc.8", "0.1.7"}

// serveBackends are the stores the API is checked on: SQLite, and
// PostgreSQL when a server answers (required under CI).
func serveBackends(t *testing.T) map[string]func(t *testing.T) string {
	backends := map[string]func(t *testing.T) string{
		"sqlite": func(t *testing.T) string { return filepath.Join(t.TempDir(), "dsh.db") },
	}
	if _, err := pgtest.Probe(); err == nil || pgtest.Required() {
		backends["postgres"] = func(t *testing.T) string { return pgtest.NewDatabase(t) }
	}
	return backends
}

// TestServeAPIMatchesCLI checks every endpoint of the JSON API against the
// CLI's -o json for the same corpus, byte for byte, on each backend and
// under each profile: the objects are built by the same code.
func TestServeAPIMatchesCLI(t *testing.T) {
	for name, newDB := range serveBackends(t) {
		t.Run(name, func(t *testing.T) {
			isolateEnv(t)
			t.Setenv("DSH_DB", newDB(t))
			serveCorpus(t)
			ids := sessionIDs(t)
			for _, profile := range serveProfiles {
				t.Run(profile, func(t *testing.T) {
					t.Setenv("DSH_COMPAT", profile)
					s := startServe(t)
					checkAPI(t, s, ids, profile == serveProfiles[0])
				})
			}
		})
	}
}

// sessionIDs lists every session's id, as session ls prints them.
func sessionIDs(t *testing.T) []string {
	t.Helper()
	out, stderr, code := runDsh(t, "session", "ls", "-o", "jsonl")
	if code != 0 {
		t.Fatalf("session ls: exit %d: %s", code, stderr)
	}
	var ids []string
	for l := range strings.Lines(out) {
		var h struct{ ID string }
		if err := json.Unmarshal([]byte(l), &h); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, h.ID)
	}
	if len(ids) < 10 {
		t.Fatalf("only %d sessions: %s", len(ids), out)
	}
	return ids
}

// cli runs dsh and returns its stdout, which a failing check (exit 1)
// still prints in full.
func cli(t *testing.T, args ...string) string {
	t.Helper()
	out, stderr, code := runDsh(t, args...)
	if code != 0 && code != exitFound && !strings.Contains(out, `{"error":`) {
		t.Fatalf("dsh %v: exit %d: %s", args, code, stderr)
	}
	return out
}

// checkAPI checks every endpoint; first is set under the first profile,
// where the answers no profile changes are checked too.
func checkAPI(t *testing.T, s served, ids []string, first bool) {
	same := func(what string, status int, got []byte, want string) {
		t.Helper()
		if status != http.StatusOK {
			t.Errorf("%s: status %d: %s", what, status, got)
		}
		if string(got) != want {
			t.Errorf("%s:\n got %s\nwant %s", what, got, want)
		}
	}
	status, _, body := s.get(t, "/api/v1/version")
	same("version", status, body, cli(t, "version", "-o", "json"))
	status, _, body = s.get(t, "/api/v1/leases")
	same("leases", status, body, cli(t, "lease", "ls", "-o", "json"))
	status, _, body = s.get(t, "/api/v1/leases?parent=demo-parent")
	same("leases of demo-parent", status, body, cli(t, "lease", "ls", "--parent", "demo-parent", "-o", "json"))

	for _, id := range ids {
		esc := pathSegment(id)
		status, _, body = s.get(t, "/api/v1/sessions/"+esc)
		same("session "+id, status, body, cli(t, "session", "show", id, "-o", "json"))
		// A session's own usage is the same under every profile; its
		// subtree follows the profile's listing.
		usageQueries := []struct {
			query string
			args  []string
		}{{"", nil}}
		if first {
			status, _, body = s.get(t, "/api/v1/sessions/"+esc+"/usage")
			same("usage of "+id, status, body, cli(t, "usage", id, "-o", "json"))
			usageQueries = append(usageQueries, struct {
				query string
				args  []string
			}{"&scope=children&by=model", []string{"--scope", "children", "--by", "model"}})
		}
		for _, q := range usageQueries {
			want, _, code := runDsh(t, append([]string{"usage", "--parent", id, "-o", "json"}, q.args...)...)
			status, _, body = s.get(t, "/api/v1/usage?parent="+url.QueryEscape(id)+q.query)
			if code != 0 {
				// The CLI's error document (a log the 0.1.7 catalog
				// cannot read), with the matching status.
				if string(body) != want || status < 400 {
					t.Errorf("usage --parent %s%s: status %d %s, CLI exit %d %s", id, q.query, status, body, code, want)
				}
				continue
			}
			same("usage --parent "+id+q.query, status, body, want)
		}
		for _, q := range []struct {
			query string
			args  []string
		}{
			{"", nil},
			{"?scope=descendants", []string{"--scope", "descendants"}},
			{"?scope=descendants&state=inactive,corrupt", []string{"--scope", "descendants", "--state", "inactive,corrupt"}},
			{"?mode=one-shot&state=inactive", []string{"--mode", "one-shot", "--state", "inactive"}},
		} {
			want, _, code := runDsh(t, append([]string{"list", "--parent", id, "-o", "json"}, q.args...)...)
			status, _, body = s.get(t, "/api/v1/sessions/"+esc+"/children"+q.query)
			if code != 0 {
				// The CLI's error document, with the matching status.
				if string(body) != want || status < 400 {
					t.Errorf("children %s%s: status %d %s, CLI exit %d %s", id, q.query, status, body, code, want)
				}
				continue
			}
			same("children "+id+q.query, status, body, want)
		}
	}
	// Paged: the pages' rows are the listing's, in order.
	want := cli(t, "list", "--parent", "demo-parent", "--scope", "descendants", "-o", "json")
	all, pages := fetchPages(t, s, "/api/v1/sessions/demo-parent/children?scope=descendants&limit=2", 2)
	if got := joinRaw(all); got != want {
		t.Errorf("paged descendants (%d pages):\n got %s\nwant %s", pages, got, want)
	}
	if pages < 4 {
		t.Errorf("descendants came in %d pages of 2", pages)
	}

	// Usage of several ids, in the order asked (a repeat included), and
	// a subtree's usage paged: the pages' records are the CLI's array.
	several := []string{serveUsageHostile, "u-kid", "demo-parent", serveUsageHostile}
	q := url.Values{"id": several}
	status, _, body = s.get(t, "/api/v1/usage?"+q.Encode())
	same("usage of several", status, body, cli(t, append([]string{"usage", "-o", "json"}, several...)...))
	want = cli(t, "usage", "--parent", "demo-parent", "-o", "json")
	if !strings.Contains(want, `"inputTokens":1256`) || !strings.Contains(want, `"damage":"torn"`) {
		t.Errorf("the corpus's usage is not what the test counts on: %s", want)
	}
	all, pages = fetchPages(t, s, "/api/v1/usage?parent=demo-parent&limit=2", 2)
	if got := joinRaw(all); got != want || pages < 4 {
		t.Errorf("paged usage (%d pages):\n got %s\nwant %s", pages, got, want)
	}

	// The next page's link of a parent whose id holds a slash.
	if status, h, _ := s.get(t, "/api/v1/sessions/tree-a/children?limit=1"); status != http.StatusOK || !strings.HasPrefix(h.Get("Link"), "</api/v1/sessions/tree-a/children?") {
		t.Errorf("tree-a's first page: %d Link %q", status, h.Get("Link"))
	}
	if status, h, body := s.get(t, "/api/v1/sessions/a%2Fb/children?scope=descendants&limit=1"); status != http.StatusOK || h.Get("Link") != "" || !strings.Contains(string(body), `"id":".."`) {
		t.Errorf("a/b's only page: %d Link %q %s", status, h.Get("Link"), body)
	}
	for _, q := range []struct {
		query string
		args  []string
	}{
		{"", nil},
		{"?parent=demo-parent", []string{"--parent", "demo-parent"}},
		{"?parent=demo-parent&scope=descendants", []string{"--parent", "demo-parent", "--scope", "descendants"}},
		{"?all=1", []string{"--all"}},
		{"?id=demo-broken&id=tree-c", []string{"demo-broken", "tree-c"}},
	} {
		status, _, body = s.get(t, "/api/v1/diagnose"+q.query)
		same("diagnose"+q.query, status, body, cli(t, append([]string{"diagnose", "--quiet", "-o", "json"}, q.args...)...))
	}

	checkSearchAPI(t, s, ids, first)

	// Root sessions: session ls's objects, every one without a parent.
	lines := map[string]string{}
	for l := range strings.Lines(cli(t, "session", "ls", "-o", "jsonl")) {
		var h struct {
			ID     string
			Parent *string `json:"parentSession"`
		}
		if err := json.Unmarshal([]byte(l), &h); err != nil {
			t.Fatal(err)
		}
		if h.Parent == nil {
			lines[h.ID] = strings.TrimSuffix(l, "\n")
		}
	}
	status, _, body = s.get(t, "/api/v1/sessions")
	var roots []json.RawMessage
	if err := json.Unmarshal(body, &roots); err != nil || status != http.StatusOK {
		t.Fatalf("sessions: %d %s %v", status, body, err)
	}
	if len(roots) != len(lines) {
		t.Errorf("sessions: %d roots, session ls has %d", len(roots), len(lines))
	}
	for _, r := range roots {
		var h struct{ ID string }
		_ = json.Unmarshal(r, &h)
		if lines[h.ID] != string(r) {
			t.Errorf("root %s: %s, session ls: %s", h.ID, r, lines[h.ID])
		}
	}

	// Errors: the CLI's document and code, with an HTTP status.
	for _, c := range []struct {
		path   string
		args   []string
		status int
	}{
		{"/api/v1/sessions/no-such-session", []string{"session", "show", "no-such-session", "-o", "json"}, http.StatusNotFound},
		{"/api/v1/diagnose?parent=no-such-session", []string{"diagnose", "--quiet", "--parent", "no-such-session", "-o", "json"}, http.StatusNotFound},
		{"/api/v1/sessions/no-such-session/usage", []string{"usage", "no-such-session", "-o", "json"}, http.StatusNotFound},
		{"/api/v1/usage?parent=no-such-session", []string{"usage", "--parent", "no-such-session", "-o", "json"}, http.StatusNotFound},
		{"/api/v1/usage?id=demo-parent&id=no%3Csuch%3E", []string{"usage", "demo-parent", "no<such>", "-o", "json"}, http.StatusNotFound},
	} {
		status, h, body := s.get(t, c.path)
		want, _, _ := runDsh(t, c.args...)
		if status != c.status || string(body) != want || !strings.HasPrefix(h.Get("Content-Type"), "application/json") {
			t.Errorf("%s: %d %s\nwant %d %s", c.path, status, body, c.status, want)
		}
	}
	for _, c := range []struct {
		path, code string
		status     int
	}{
		{"/api/v1/sessions/demo-parent/children?scope=sideways", "USAGE", http.StatusBadRequest},
		{"/api/v1/sessions/demo-parent/children?state=asleep", "USAGE", http.StatusBadRequest},
		{"/api/v1/sessions/demo-parent/children?limit=100000", "USAGE", http.StatusBadRequest},
		{"/api/v1/sessions/demo-parent/children?cursor=%21%21", "USAGE", http.StatusBadRequest},
		{"/api/v1/nothing", "NOT_FOUND", http.StatusNotFound},
		{"/api/v1/usage", "USAGE", http.StatusBadRequest},
		{"/api/v1/usage?parent=demo-parent&id=tree-a", "USAGE", http.StatusBadRequest},
		{"/api/v1/usage?id=tree-a&scope=children", "USAGE", http.StatusBadRequest},
		{"/api/v1/usage?parent=demo-parent&scope=sideways", "USAGE", http.StatusBadRequest},
		{"/api/v1/usage?parent=demo-parent&by=kind", "USAGE", http.StatusBadRequest},
		{"/api/v1/usage?parent=demo-parent&limit=0", "USAGE", http.StatusBadRequest},
		{"/api/v1/usage?parent=demo-parent&cursor=%21%21", "USAGE", http.StatusBadRequest},
		{"/api/v1/usage?id=", "INVALID_INPUT", http.StatusBadRequest},
		{"/api/v1/usage?parent=", "INVALID_INPUT", http.StatusBadRequest},
		{"/api/v1/usage?id=a%00b", "INVALID_INPUT", http.StatusBadRequest},
		{"/api/v1/sessions/demo-parent/usage?limit=x", "USAGE", http.StatusBadRequest},
	} {
		status, _, body := s.get(t, c.path)
		if status != c.status || !strings.Contains(string(body), `{"error":{"code":"`+c.code+`"`) {
			t.Errorf("%s: %d %s, want %d %s", c.path, status, body, c.status, c.code)
		}
	}
}

// checkSearchAPI checks /api/v1/search against dsh search -o json, byte
// for byte: every session's subtree (which follows the profile's
// listing), and, under the first profile, the filters, hostile and
// malformed queries, paging and the errors.
func checkSearchAPI(t *testing.T, s served, ids []string, first bool) {
	t.Helper()
	// check compares one search; the CLI's exit decides the status.
	check := func(query url.Values, args ...string) {
		t.Helper()
		want, stderr, code := runDsh(t, append([]string{"search", "-o", "json"}, args...)...)
		status, h, body := s.get(t, "/api/v1/search?"+query.Encode())
		wantStatus := http.StatusOK
		switch {
		case code == 0:
		case strings.Contains(want, `"code":"NOT_FOUND"`):
			wantStatus = http.StatusNotFound
		case strings.Contains(want, `"code":"INVALID_INPUT"`), strings.Contains(want, `"code":"USAGE"`):
			wantStatus = http.StatusBadRequest
		case strings.Contains(want, `"code":"INVALID_LOG"`):
			// A log the 0.1.7 catalog cannot read, under its listing.
			wantStatus = http.StatusUnprocessableEntity
		default:
			t.Errorf("search %q: CLI exit %d %s %s", args, code, want, stderr)
		}
		if status != wantStatus || string(body) != want || !strings.HasPrefix(h.Get("Content-Type"), "application/json") {
			t.Errorf("search ?%s: %d %s\nwant %d %s", query.Encode(), status, body, wantStatus, want)
		}
	}
	for _, id := range ids {
		check(url.Values{"q": {"ok OR x OR bold"}, "parent": {id}}, "ok OR x OR bold", "--parent", id)
		if first {
			check(url.Values{"q": {"ok OR b*"}, "parent": {id}, "scope": {"children"}, "n": {"0"}}, "ok OR b*", "--parent", id, "--scope", "children", "-n", "0")
		}
	}
	if !first {
		return
	}
	want := cli(t, "search", "bold", "-o", "json", "-n", "0")
	if !strings.Contains(want, `"sessionId":"u\u003cb\u003e\"tok"`) && !strings.Contains(want, `"sessionId":"u<b>\"tok"`) || !strings.Contains(want, `<b>«bold»</b> & \"quoted\" «not a mark» 5<6`) {
		t.Errorf("the corpus's hits are not what the test counts on: %s", want)
	}
	for _, c := range []struct {
		query url.Values
		args  []string
	}{
		{url.Values{"q": {"bold"}}, []string{"bold"}},
		{url.Values{"q": {`"not a mark"`}}, []string{`"not a mark"`}},
		{url.Values{"q": {"ok OR a OR b OR x OR y"}, "n": {"0"}}, []string{"ok OR a OR b OR x OR y", "-n", "0"}},
		{url.Values{"q": {"ok OR a OR b OR x OR y"}, "n": {"3"}}, []string{"ok OR a OR b OR x OR y", "-n", "3"}},
		{url.Values{"q": {"ok OR x"}, "type": {"assistant/message"}}, []string{"ok OR x", "--type", "assistant/message"}},
		{url.Values{"q": {"ok OR x"}, "type": {"user/message,tool/result"}}, []string{"ok OR x", "--type", "user/message,tool/result"}},
		{url.Values{"q": {"ok OR x"}, "type": {"user/message", "assistant/message"}}, []string{"ok OR x", "--type", "user/message", "--type", "assistant/message"}},
		{url.Values{"q": {"ok"}, "since": {"1970-01-01T00:00:00.007Z"}}, []string{"ok", "--since", "1970-01-01T00:00:00.007Z"}},
		{url.Values{"q": {"ok"}, "until": {"1970-01-01T00:00:00.007Z"}}, []string{"ok", "--until", "1970-01-01T00:00:00.007Z"}},
		{url.Values{"q": {"ok"}, "since": {"1970-01-01"}, "until": {"2999-01-01"}}, []string{"ok", "--since", "1970-01-01", "--until", "2999-01-01"}},
		{url.Values{"q": {"nothing-matches-this"}}, []string{"nothing-matches-this"}},
		// Query text hostile to an engine's own syntax: quoted, or refused
		// with the same INVALID_INPUT document.
		{url.Values{"q": {`"'; DROP TABLE events; --"`}}, []string{`"'; DROP TABLE events; --"`}},
		{url.Values{"q": {`"<script>" OR "5<6"`}}, []string{`"<script>" OR "5<6"`}},
		{url.Values{"q": {`"«not»"`}}, []string{`"«not»"`}},
		{url.Values{"q": {"'; DROP TABLE events; --"}}, []string{"'; DROP TABLE events; --"}},
		{url.Values{"q": {"<b>"}}, []string{"<b>"}},
		{url.Values{"q": {"title:foo"}}, []string{"title:foo"}},
		{url.Values{"q": {`"unclosed`}}, []string{`"unclosed`}},
		{url.Values{"q": {"NOT x"}}, []string{"NOT x"}},
		{url.Values{"q": {"x) OR ("}}, []string{"x) OR ("}},
		{url.Values{"q": {"a*b"}}, []string{"a*b"}},
		{url.Values{"q": {`a\b`}}, []string{`a\b`}},
		{url.Values{"q": {strings.Repeat("(", 40) + "x" + strings.Repeat(")", 40)}}, []string{strings.Repeat("(", 40) + "x" + strings.Repeat(")", 40)}},
		{url.Values{"q": {"x\u0000y"}}, []string{"x\u0000y"}},
		{url.Values{"q": {""}}, []string{""}},
		{url.Values{}, []string{""}},
		{url.Values{"q": {"ok"}, "parent": {"no-such-session"}}, []string{"ok", "--parent", "no-such-session"}},
		{url.Values{"q": {"ok"}, "parent": {"no<such>"}}, []string{"ok", "--parent", "no<such>"}},
	} {
		check(c.query, c.args...)
	}
	// Paged: the pages' hits are the CLI's array, all of them or the
	// first n (each page's search stops at its end).
	for _, n := range []string{"0", "5"} {
		checkSearchPages(t, s, n)
	}
	// The parameters the CLI takes as flags: the same code, named without
	// dashes.
	for _, c := range []struct{ query, code, message string }{
		{"q=ok&scope=children", "USAGE", "scope needs parent"},
		{"q=ok&parent=demo-parent&scope=sideways", "USAGE", ""},
		{"q=ok&n=-1", "USAGE", "n: -1 is negative"},
		{"q=ok&n=many", "USAGE", ""},
		{"q=ok&type=tool/call", "USAGE", `type: \"tool/call\" is not one of user/message, assistant/message, tool/result`},
		{"q=ok&since=yesterday", "USAGE", `since: \"yesterday\" is not an RFC 3339 time`},
		{"q=ok&until=tomorrow", "USAGE", `until: \"tomorrow\" is not`},
		{"q=ok&parent=", "INVALID_INPUT", ""},
		{"q=ok&parent=a%00b", "INVALID_INPUT", ""},
		{"q=ok&limit=0", "USAGE", ""},
		{"q=ok&cursor=%21%21", "USAGE", ""},
	} {
		status, _, body := s.get(t, "/api/v1/search?"+c.query)
		if status != http.StatusBadRequest || !strings.HasPrefix(string(body), `{"error":{"code":"`+c.code+`","message":"`+c.message) {
			t.Errorf("search ?%s: %d %s, want 400 %s %s", c.query, status, body, c.code, c.message)
		}
	}
}

// fetchPages follows an API list's Link headers from first to its last
// page, each of at most limit rows, and returns the rows in order and how
// many pages held them.
func fetchPages(t *testing.T, s served, first string, limit int) (all []json.RawMessage, pages int) {
	t.Helper()
	for next := first; next != ""; pages++ {
		status, h, body := s.get(t, next)
		var page []json.RawMessage
		if err := json.Unmarshal(body, &page); err != nil || status != http.StatusOK {
			t.Fatalf("%s: %d %s (%v)", next, status, body, err)
		}
		if len(page) > limit {
			t.Errorf("%s: %d rows on a page of %d", next, len(page), limit)
		}
		all = append(all, page...)
		next = ""
		if link := h.Get("Link"); link != "" {
			next = strings.TrimPrefix(strings.SplitN(link, ">", 2)[0], "<")
		}
	}
	return all, pages
}

// checkSearchPages fetches a search's pages of 2 and compares them,
// joined, with dsh search -n n -o json.
func checkSearchPages(t *testing.T, s served, n string) {
	t.Helper()
	const query = "ok OR a OR b OR x OR y OR bold"
	want := cli(t, "search", query, "-n", n, "-o", "json")
	all, pages := fetchPages(t, s, "/api/v1/search?"+url.Values{"q": {query}, "n": {n}, "limit": {"2"}}.Encode(), 2)
	if got := joinRaw(all); got != want || pages < 3 {
		t.Errorf("paged search, n=%s (%d pages):\n got %s\nwant %s", n, pages, got, want)
	}
}

// pathSegment is id as one segment of a URL path: "." and ".." escaped
// too, as the pages' links escape them.
func pathSegment(id string) string {
	if id == "." || id == ".." {
		return strings.ReplaceAll(id, ".", "%2E")
	}
	return url.PathEscape(id)
}

func joinRaw(items []json.RawMessage) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, it := range items {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(it)
	}
	b.WriteString("]\n")
	return b.String()
}

// TestServeToken: off loopback a token is required to start; with one,
// every request needs it (bearer or cookie), a wrong one is 401, and
// ?token= once becomes the cookie.
func TestServeToken(t *testing.T) {
	isolateEnv(t)
	t.Setenv("DSH_DB", filepath.Join(t.TempDir(), "dsh.db"))
	if _, stderr, code := runDsh(t, "demo"); code != 0 {
		t.Fatalf("demo: %s", stderr)
	}
	for _, listen := range []string{"0.0.0.0:0", ":0", "[::]:0", "192.0.2.1:0", "example.com:0"} {
		_, stderr, code := runDsh(t, "serve", "--listen", listen)
		if code != exitUsage || !strings.Contains(stderr, "--token") {
			t.Errorf("serve --listen %s without a token: exit %d: %s", listen, code, stderr)
		}
	}
	if _, stderr, code := runDsh(t, "serve", "--token", ""); code != exitUsage {
		t.Errorf("empty --token: exit %d: %s", code, stderr)
	}

	const token = "s3cret-token"
	t.Setenv("DSH_TOKEN", token)
	s := startServe(t)
	for _, path := range []string{"/api/v1/version", "/", "/sessions/demo-parent", "/diagnose", "/api/v1/events?view=roots", "/assets/app.js"} {
		for _, h := range [][]string{nil, {"Authorization", "Bearer wrong"}, {"Authorization", "Bearer " + token + "x"}, {"Cookie", "dsh_token=nope"}} {
			status, hdr, body := s.get(t, path, h...)
			if status != http.StatusUnauthorized || hdr.Get("WWW-Authenticate") == "" || bytes.Contains(body, []byte("demo-parent</")) {
				t.Errorf("%s %v: %d %s", path, h, status, body)
			}
		}
	}
	status, _, body := s.get(t, "/api/v1/version", "Authorization", "Bearer "+token)
	if status != http.StatusOK || !bytes.Contains(body, []byte(`"schemaVersion"`)) {
		t.Errorf("bearer: %d %s", status, body)
	}
	status, _, body = s.get(t, "/api/v1/version?token=wrong")
	if status != http.StatusUnauthorized {
		t.Errorf("wrong ?token=: %d %s", status, body)
	}
	status, hdr, _ := s.get(t, "/sessions/demo-parent?scope=children&token="+token)
	cookie := hdr.Get("Set-Cookie")
	if status != http.StatusSeeOther || hdr.Get("Location") != "/sessions/demo-parent?scope=children" || !strings.Contains(cookie, "HttpOnly") || !strings.Contains(cookie, "SameSite=Strict") {
		t.Fatalf("?token=: %d Location %q Set-Cookie %q", status, hdr.Get("Location"), cookie)
	}
	status, _, body = s.get(t, "/sessions/demo-parent?scope=children", "Cookie", strings.SplitN(cookie, ";", 2)[0])
	if status != http.StatusOK || !bytes.Contains(body, []byte(`data-id="demo-continuable"`)) {
		t.Errorf("cookie: %d %s", status, body)
	}
}

// TestServeLoopbackOnlyAnswersLocalHosts: without a token the server
// answers only requests addressed to a loopback name (a page elsewhere
// cannot reach it through DNS rebinding), and every answer carries the
// security headers.
func TestServeLoopbackOnlyAnswersLocalHosts(t *testing.T) {
	isolateEnv(t)
	t.Setenv("DSH_DB", filepath.Join(t.TempDir(), "dsh.db"))
	if _, stderr, code := runDsh(t, "demo"); code != 0 {
		t.Fatalf("demo: %s", stderr)
	}
	s := startServe(t)
	if status, _, _ := s.get(t, "/", "Host", "attacker.example:7420"); status != http.StatusMisdirectedRequest {
		t.Errorf("foreign Host: %d", status)
	}
	for _, path := range []string{"/", "/api/v1/version", "/sessions/demo-parent", "/assets/app.js"} {
		status, h, _ := s.get(t, path, "Host", "localhost:7420")
		csp := h.Get("Content-Security-Policy")
		if status != http.StatusOK || !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") || h.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: %d CSP %q nosniff %q", path, status, csp, h.Get("X-Content-Type-Options"))
		}
	}
	req, _ := http.NewRequest(http.MethodPost, s.url+"api/v1/version", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d", resp.StatusCode)
	}
}

// TestServeWritesNothing: serving, and answering every endpoint and page,
// leaves the database's bytes as they were.
func TestServeWritesNothing(t *testing.T) {
	home := isolateEnv(t)
	db := filepath.Join(home, "dsh.db")
	t.Setenv("DSH_DB", db)
	serveCorpus(t)
	files := []string{db, db + "-wal", db + "-shm"}
	before := make([]fileState, len(files))
	for i, f := range files {
		before[i] = stateOf(t, f)
	}
	time.Sleep(10 * time.Millisecond)
	s := startServe(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.url+"api/v1/events?view=tree&id=demo-parent&scope=descendants", nil)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		_, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	for _, path := range []string{"/", "/?q=demo", "/sessions/demo-parent", "/sessions/demo-broken", "/sessions/tree-c?scope=children", "/diagnose", "/diagnose?parent=demo-parent&scope=descendants",
		"/api/v1/version", "/api/v1/sessions", "/api/v1/sessions/demo-parent", "/api/v1/sessions/demo-parent/children?scope=descendants", "/api/v1/diagnose", "/api/v1/diagnose?all=1", "/api/v1/leases", "/api/v1/leases?parent=demo-parent",
		"/api/v1/sessions/demo-parent/usage", "/api/v1/usage?parent=demo-parent", "/api/v1/usage?parent=demo-parent&scope=children", "/api/v1/usage?id=u-kid&id=demo-broken",
		"/search", "/search?q=ok+OR+bold", "/search?q=bold&parent=demo-parent&scope=children", "/api/v1/search?q=ok+OR+bold", "/api/v1/search?q=ok&parent=demo-parent&n=0"} {
		if status, _, body := s.get(t, path); status != http.StatusOK {
			t.Errorf("%s: %d %s", path, status, body)
		}
	}
	if code, stderr := s.stop(); code != 0 {
		t.Errorf("serve: exit %d: %s", code, stderr)
	}
	for i, f := range files {
		after := stateOf(t, f)
		if after.exists != before[i].exists || !bytes.Equal(after.content, before[i].content) || !after.mtime.Equal(before[i].mtime) {
			t.Errorf("%s changed while serving", filepath.Base(f))
		}
	}
}

// TestServeStopsOnSignal: SIGINT and SIGTERM stop a server process
// gracefully, with exit 0.
func TestServeStopsOnSignal(t *testing.T) {
	isolateEnv(t)
	db := filepath.Join(t.TempDir(), "dsh.db")
	if _, stderr, code := runDsh(t, "--db", db, "demo"); code != 0 {
		t.Fatalf("demo: %s", stderr)
	}
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		cmd := exec.Command("dsh", "--db", db, "serve", "--listen", "127.0.0.1:0")
		cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir())
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		addr, err := bufio.NewReader(out).ReadString('\n')
		if err != nil {
			t.Fatalf("no address: %v: %s", err, stderr.String())
		}
		// An open event stream must not hold the shutdown up.
		resp, err := http.Get(strings.TrimSpace(addr) + "api/v1/events?view=roots")
		if err != nil {
			t.Fatal(err)
		}
		_ = cmd.Process.Signal(sig)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("%v: %v: %s", sig, err, stderr.String())
			}
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			t.Fatalf("%v: still running after 10s", sig)
		}
	}
}

// TestServePagesEscape: hostile ids and labels are text in the pages, and
// bidirectional controls are shown, not obeyed.
func TestServePagesEscape(t *testing.T) {
	isolateEnv(t)
	t.Setenv("DSH_DB", filepath.Join(t.TempDir(), "dsh.db"))
	serveCorpus(t)
	s := startServe(t)
	status, _, body := s.get(t, "/sessions/demo-parent")
	if status != http.StatusOK {
		t.Fatalf("%d %s", status, body)
	}
	page := string(body)
	for _, bad := range []string{"<script>window", "<img src=x", "\u202e"} {
		if strings.Contains(page, bad) {
			t.Errorf("page holds %q raw", bad)
		}
	}
	for _, want := range []string{"&lt;script&gt;window.pwned=1&lt;/script&gt;", "&lt;img src=x onerror=&#34;window.pwned=1&#34;&gt;", `bidi \u202eevil\u202c text`, `href="/sessions/%3Cscript%3Ewindow.pwned=1%3C%2Fscript%3E"`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	// The usage of the parent and of each row, the hostile row's note
	// escaped too.
	for _, want := range []string{`<tr class="subtree"><th>with everything below</th><td class="messages">2</td><td class="input">1256</td><td class="output">42</td>`,
		`<a class="child" href="/sessions/u%3Cb%3E%22tok">u&lt;b&gt;&#34;tok</a>`, `56 in / 8 out</span> <span class="usage-note">torn from seq 2, prefix counted</span>`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	status, _, body = s.get(t, "/sessions/"+url.PathEscape(serveUsageHostile))
	if status != http.StatusOK || strings.Contains(string(body), "<b>") || !strings.Contains(string(body), `<tr class="own"><th>own</th><td class="messages">1</td><td class="input">56</td>`) {
		t.Errorf("page of the hostile usage child: %d %s", status, body)
	}
	status, _, body = s.get(t, "/sessions/"+url.PathEscape(`<script>window.pwned=1</script>`))
	if status != http.StatusOK || strings.Contains(string(body), "<script>window") {
		t.Errorf("hostile session page: %d", status)
	}
	// The search page: each hit's snippet escaped, only its highlighted
	// words marked (not the « » its text holds), its session linked.
	status, _, body = s.get(t, "/search?q=bold+OR+script")
	page = string(body)
	if status != http.StatusOK || strings.Contains(page, "<b>bold") || strings.Contains(page, "<script>window") {
		t.Errorf("search page: %d %s", status, page)
	}
	for _, want := range []string{`<td class="snippet">ok: &lt;b&gt;<mark>bold</mark>&lt;/b&gt; &amp; &#34;quoted&#34; «not a mark» 5&lt;6</td>`,
		`<td class="snippet">ok &lt;<mark>script</mark>&gt;window.pwned=1&lt;/<mark>script</mark>&gt; <mark>bold</mark></td>`,
		`<a class="session" href="/sessions/u%3Cb%3E%22tok">u&lt;b&gt;&#34;tok</a>`, `<a class="session" href="/sessions/u-kid">u-kid</a>`,
		`<input type="search" name="q" value="bold OR script"`, `<a href="/sessions/u%3Cb%3E%22tok">u&lt;b&gt;&#34;tok</a> <span class="usage-note">torn from seq 2, prefix searched</span>`} {
		if !strings.Contains(page, want) {
			t.Errorf("search page lacks %s", want)
		}
	}
	// A malformed query, or an unknown parent: the form again, with the
	// CLI's message and the API's status.
	for _, c := range []struct {
		query, want string
		status      int
	}{
		{"q=title%3Cfoo", `<p class="error">search query: unexpected &#39;&lt;&#39; at column 6`, http.StatusBadRequest},
		{"q=ok&parent=no%3Csuch%3E", `<p class="error">no session with id &#34;no&lt;such&gt;&#34;</p>`, http.StatusNotFound},
	} {
		status, _, body = s.get(t, "/search?"+c.query)
		if status != c.status || !strings.Contains(string(body), c.want) || !strings.Contains(string(body), `<form class="filter search"`) {
			t.Errorf("search page ?%s: %d %s", c.query, status, body)
		}
	}
	// Ids a path would split or resolve link to their own pages.
	status, _, body = s.get(t, "/sessions/a%2Fb")
	if status != http.StatusOK || !strings.Contains(string(body), `<a class="child" href="/sessions/%2E%2E">..</a>`) {
		t.Errorf("page of a/b: %d %s", status, body)
	}
	status, _, body = s.get(t, "/sessions/%2E%2E")
	if status != http.StatusOK || !strings.Contains(string(body), `<a href="/sessions/a%2Fb">a/b</a>`) {
		t.Errorf("page of ..: %d %s", status, body)
	}
}

// catMessage is a searched message of the source corpus, hostile to a
// page.
const catMessage = `{"type":"user/message","seq":1,"time":5,"data":{"content":[{"type":"text","text":"find <me> & this"}],"source":{"kind":"user"},"role":"user","id":"u0"},"surfaceOp":"append"}`

// TestServeTakesEverySourceForm: dsh serve --source reads every form the
// registry offers, and its API answers as the CLI does with the same
// --source, byte for byte.
func TestServeTakesEverySourceForm(t *testing.T) {
	home := isolateEnv(t)
	t.Setenv("DSH_DB", filepath.Join(home, "unused", "dsh.db"))
	dir := t.TempDir()
	sources := map[string]string{}
	for _, form := range []string{"jsonl", "dsh-home", "dsh-sqlite"} {
		sessions := []*catSession{
			{id: "p", header: catHeaderP},
			{id: "c", header: catHeaderC, lines: catChildLines()},
			{id: "g", header: catHeaderG, lines: []string{catDescriptor("grandchild"), catMessage}},
			{id: "s", header: catHeaderS, lines: []string{catDescriptor("sibling")}},
		}
		formDir := filepath.Join(dir, form)
		if err := os.Mkdir(formDir, 0o755); err != nil {
			t.Fatal(err)
		}
		sources[form] = writeCatForm(t, formDir, sessions, form)
	}
	db := filepath.Join(dir, "dsh.db")
	if _, stderr, code := runDsh(t, "--db", db, "import", sources["jsonl"], "--quiet"); code != 0 {
		t.Fatalf("import: exit %d: %s", code, stderr)
	}
	sources["dsh"] = "dsh:" + db
	for _, sc := range location.Schemes(location.SourceUse) {
		src, ok := sources[sc.Name]
		if !ok {
			t.Fatalf("the registry offers %s:, which this test does not lay out", sc.Name)
		}
		t.Run(sc.Name, func(t *testing.T) {
			s := startServe(t, "--source", src)
			for path, args := range map[string][]string{
				"/api/v1/sessions/p/children":                   {"list", "--parent", "p", "-o", "json"},
				"/api/v1/sessions/p/children?scope=descendants": {"list", "--parent", "p", "--scope", "descendants", "-o", "json"},
				"/api/v1/sessions/c":                            {"session", "show", "c", "-o", "json"},
				"/api/v1/diagnose?all=1":                        {"diagnose", "--quiet", "--all", "-o", "json"},
				"/api/v1/diagnose?parent=p&scope=descendants":   {"diagnose", "--quiet", "--parent", "p", "--scope", "descendants", "-o", "json"},
				"/api/v1/usage?parent=p":                        {"usage", "--parent", "p", "-o", "json"},
				"/api/v1/usage?id=c&id=g":                       {"usage", "c", "g", "-o", "json"},
				"/api/v1/sessions/c/usage":                      {"usage", "c", "-o", "json"},
				"/api/v1/search?q=find+OR+this":                 {"search", "find OR this", "-o", "json"},
				"/api/v1/search?q=this&parent=p":                {"search", "this", "--parent", "p", "-o", "json"},
				"/api/v1/search?q=this&parent=p&scope=children": {"search", "this", "--parent", "p", "--scope", "children", "-o", "json"},
			} {
				want := cli(t, append(args, "--source", src)...)
				status, _, body := s.get(t, path)
				if status != http.StatusOK || string(body) != want {
					t.Errorf("%s: %d\n got %s\nwant %s", path, status, body, want)
				}
			}
			if want := cli(t, "search", "this", "-o", "json", "--source", src); !strings.Contains(want, `"snippet":"find <me> & «this»"`) {
				t.Errorf("the source's hits are not what the test counts on: %s", want)
			}
			if status, _, body := s.get(t, "/sessions/p"); status != http.StatusOK || !bytes.Contains(body, []byte(`data-id="g"`)) {
				t.Errorf("page of p: %d %s", status, body)
			}
			if status, _, body := s.get(t, "/sessions/nobody"); status != http.StatusNotFound {
				t.Errorf("page of an unknown session: %d %s", status, body)
			}
		})
	}
	// A source holding a parent's children but not the parent: its page
	// still shows the children, as dsh list lists them, and says the
	// session itself is missing.
	orphans := filepath.Join(dir, "orphans")
	if err := os.Mkdir(orphans, 0o755); err != nil {
		t.Fatal(err)
	}
	src := writeCatForm(t, orphans, []*catSession{
		{id: "c", header: catHeaderC, lines: catChildLines()},
		{id: "s", header: catHeaderS, lines: []string{catDescriptor("sibling")}},
	}, "jsonl")
	s := startServe(t, "--source", src)
	status, _, body := s.get(t, "/sessions/p")
	if status != http.StatusOK || !bytes.Contains(body, []byte(`data-id="s"`)) || !bytes.Contains(body, []byte(`no session with id &#34;p&#34;`)) {
		t.Errorf("page of a parent known only by its children: %d %s", status, body)
	}
}
