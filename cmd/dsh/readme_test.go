package main

// TestReadmeExamples runs every shell example of README.md as printed, in
// order, in one bash session, the way a new user would type them on a fresh
// clone: a sandbox HOME and working directory, no ../shared, nothing
// installed but Go. `dsh` is this test binary (testscript puts it on PATH)
// until the Install block's `go install` and `export PATH=…` put the real
// build first.
//
// Conventions for README authors (every ```sh block is run unless marked):
//
//   - Commands starting with `go` or `scripts/` run from the repository's
//     root; everything else runs in the sandbox's working directory, with
//     $HOME the sandbox home. Both start empty: nothing is prepared for the
//     examples, which run as a newcomer types them, in order, so each uses
//     only what the examples before it made (or is marked skip, saying in
//     one line what it assumes).
//   - Every command must exit 0, unless the block is preceded by
//     `<!-- readme-test: status 0,1 -->` (the statuses any of its commands
//     may exit with: examples of checks that fail on purpose).
//   - `<!-- readme-test: needs postgres -->` runs the block only when a
//     PostgreSQL server answers (internal/pgtest: DSH_TEST_POSTGRES or
//     127.0.0.1:5432), in a subshell with DSH_DB naming one database, fresh
//     and empty before the first such block and shared by all of them, as
//     the README's own `export DSH_DB=…` is (dropped afterwards); otherwise
//     the block is skipped with a message (and fails when CI=true or
//     DSH_TEST_POSTGRES is set).
//   - `<!-- readme-test: skip REASON -->` leaves a block out; the reason is
//     logged. Use it only for what cannot run inside a test (go test ./...).
//   - A block that uses jq is skipped, with a message, when jq is absent.
//   - In the Guarantees section, each `go test` command must name at least
//     one test: it is listed with go test -list (which builds the packages
//     and parses the flags) rather than run, since `go test ./...` runs
//     those tests anyway, except a -run pattern naming a subtest (which
//     -list cannot see), which runs as printed. `scripts/torture` is checked
//     to parse and to know the flags given. A `go test` whose pattern
//     matches no test fails.
//
// The marker is an HTML comment on the last non-blank line before the block,
// so it does not show in the rendered README.

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-project/dsh/internal/pgtest"
)

// readmeBlock is one ```sh block of the README.
type readmeBlock struct {
	line       int      // README line of the first command
	lines      []string // the commands, continuation lines joined
	status     string   // allowed exit statuses, comma-separated
	skip       string   // why the block is left out ("" to run it)
	postgres   bool     // needs a PostgreSQL server
	guarantees bool     // in the Guarantees section
}

var markerRE = regexp.MustCompile(`^<!--\s*readme-test:\s*(.*?)\s*-->$`)

// readmeBlocks parses the shell blocks of a README.
func readmeBlocks(t *testing.T, text string) []readmeBlock {
	t.Helper()
	var blocks []readmeBlock
	var cur *readmeBlock
	lastNonBlank, section := "", ""
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		raw := sc.Text()
		line := strings.TrimSpace(raw)
		if cur != nil {
			if strings.HasPrefix(line, "```") {
				blocks = append(blocks, *cur)
				cur = nil
				continue
			}
			if line == "" {
				continue
			}
			if k := len(cur.lines); k > 0 && strings.HasSuffix(cur.lines[k-1], "\\") {
				cur.lines[k-1] = strings.TrimSuffix(cur.lines[k-1], "\\") + " " + line
				continue
			}
			if cur.line == 0 {
				cur.line = n
			}
			cur.lines = append(cur.lines, line)
			continue
		}
		if strings.HasPrefix(line, "## ") {
			section = line
		}
		if line == "```sh" || line == "```bash" {
			cur = &readmeBlock{status: "0", guarantees: section == "## Guarantees"}
			if m := markerRE.FindStringSubmatch(lastNonBlank); m != nil {
				switch f := strings.Fields(m[1]); {
				case len(f) == 2 && f[0] == "status":
					cur.status = f[1]
				case len(f) >= 2 && f[0] == "skip":
					cur.skip = strings.Join(f[1:], " ")
				case len(f) == 2 && f[0] == "needs" && f[1] == "postgres":
					cur.postgres = true
				default:
					t.Fatalf("README line %d: unknown marker %q", n-1, lastNonBlank)
				}
			}
			continue
		}
		if line != "" {
			lastNonBlank = line
		}
	}
	if cur != nil {
		t.Fatalf("README: the block opened before line %d is never closed", cur.line)
	}
	return blocks
}

// readmeShellPrelude is the bash set-up before the README's commands:
// failures are collected, not fatal, so one run reports every broken
// example; the Guarantees helpers replace go and scripts/torture there.
const readmeShellPrelude = `set -o pipefail
readme_failed=0
readme_check() { # status line allowed
	case ",$3," in
	*",$1,"*) ;;
	*) echo "README-TEST: README line $2 exited with status $1, want $3" >&2; readme_failed=1 ;;
	esac
}
readme_at_root() { (cd "$README_REPO" && "$@"); }
# go test in the Guarantees section: list the tests it would run (go test
# ./... runs them), or run it as printed when its pattern names a subtest,
# requiring a test either way.
readme_go_test() {
	local out pat="" pkgs=() args=("$@")
	while [ $# -gt 0 ]; do
		case "$1" in
		-run) pat="$2"; shift 2 ;;
		-run=*) pat="${1#-run=}"; shift ;;
		-*) shift ;;
		*) pkgs+=("$1"); shift ;;
		esac
	done
	if [ -n "${DSH_TORTURE:-}" ] || [[ "$pat" != */* ]]; then
		pat="${pat%%/*}"
		out=$(command go test -list "${pat:-.}" "${pkgs[@]}" 2>&1) || { echo "$out" >&2; return 1; }
		if ! grep -qE '^(Test|Fuzz)' <<<"$out"; then
			echo "README-TEST: go test -list ${pat:-.} ${pkgs[*]}: no test" >&2
			return 1
		fi
		return 0
	fi
	out=$(command go test "${args[@]}" 2>&1)
	local st=$?
	echo "$out"
	if grep -qE 'no tests to run|no test files' <<<"$out"; then
		echo "README-TEST: go test ${args[*]}: runs no test" >&2
		return 1
	fi
	return $st
}
readme_torture() {
	local script="$README_REPO/scripts/torture"
	bash -n "$script" || return 1
	local a
	for a in "$@"; do
		case "$a" in
		--*) grep -q -- "$a)" "$script" || { echo "README-TEST: scripts/torture does not know $a" >&2; return 1; } ;;
		esac
	done
	# Every fuzz target the script runs exists (go test -list builds only
	# those packages' test binaries, not every package's).
	local pkg target n=0
	while read -r pkg target; do
		out=$(cd "$README_REPO" && command go test -list "^$target\$" "./$pkg" 2>&1) || { echo "$out" >&2; return 1; }
		grep -qx "$target" <<<"$out" || { echo "README-TEST: scripts/torture fuzzes $pkg $target, which does not exist" >&2; return 1; }
		n=$((n + 1))
	done < <(sed -n '/^internal\/[a-z]* Fuzz[A-Za-z]*$/p' "$script")
	[ "$n" -gt 0 ] || { echo "README-TEST: scripts/torture names no fuzz target" >&2; return 1; }
}
`

// readmeCommand is one README command as the generated script runs it: the
// text unchanged, run from the repository's root when it is a go or
// scripts/ command, and in the Guarantees section through the helpers that
// make sure it runs a test.
func readmeCommand(line string, b readmeBlock) string {
	if m := guaranteeGoTestRE.FindStringSubmatch(line); b.guarantees && m != nil {
		return m[1] + "readme_at_root readme_go_test" + m[2]
	}
	if m := guaranteeTortureRE.FindStringSubmatch(line); b.guarantees && m != nil {
		return "readme_torture" + m[1]
	}
	if rootCommandRE.MatchString(line) {
		// On lines of their own, so that a trailing comment ends with
		// its line, not with the subshell.
		return "(cd \"$README_REPO\" && {\n" + line + "\n})"
	}
	return line
}

var (
	guaranteeGoTestRE  = regexp.MustCompile(`^((?:[A-Z_][A-Z0-9_]*=\S*\s+)*)go test\b(.*)$`)
	guaranteeTortureRE = regexp.MustCompile(`^scripts/torture\b(.*)$`)
	rootCommandRE      = regexp.MustCompile(`^(?:[A-Z_][A-Z0-9_]*=\S*\s+)*(?:go\s|scripts/)`)
)

// readmeNestedEnv is set in the README's sandbox: a go test run from an
// example must never run the README again.
const readmeNestedEnv = "DSH_README_TEST_NESTED"

func TestReadmeExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs every README example (about 100 s); go test ./... runs it")
	}
	if os.Getenv(readmeNestedEnv) != "" {
		t.Skip("run from a README example")
	}
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(filepath.Join(repo, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := readmeBlocks(t, string(text))
	if len(blocks) < 10 {
		t.Fatalf("found %d shell blocks in README.md; the parser is broken", len(blocks))
	}
	env := readmeSandbox(t, repo)
	_, jqErr := exec.LookPath("jq")

	var script strings.Builder
	script.WriteString(readmeShellPrelude)
	ran := 0
	pgDB := "" // the one database of every `needs postgres` block
	for _, b := range blocks {
		usesJQ := false
		for _, l := range b.lines {
			usesJQ = usesJQ || regexp.MustCompile(`\|\s*jq\b`).MatchString(l)
		}
		switch {
		case b.skip != "":
			t.Logf("README line %d: block not run: %s", b.line, b.skip)
			continue
		case usesJQ && jqErr != nil:
			t.Run(fmt.Sprintf("line%d", b.line), func(t *testing.T) { t.Skipf("README line %d uses jq, which is not installed", b.line) })
			continue
		case b.postgres:
			if _, perr := pgtest.Probe(); perr != nil {
				if pgtest.Required() {
					t.Fatalf("README line %d needs PostgreSQL: %v", b.line, perr)
				}
				t.Run(fmt.Sprintf("line%d", b.line), func(t *testing.T) {
					t.Skipf("README line %d needs a PostgreSQL server: %v", b.line, perr)
				})
				continue
			}
			if pgDB == "" {
				pgDB = pgtest.NewDatabase(t)
			}
			fmt.Fprintf(&script, "(\nexport DSH_DB=%q\n", pgDB)
		}
		for i, l := range b.lines {
			if strings.HasPrefix(l, "#") {
				continue
			}
			fmt.Fprintf(&script, "%s\nreadme_check $? %d %q\n", readmeCommand(l, b), b.line+i, b.status)
			ran++
		}
		if b.postgres {
			script.WriteString("exit $readme_failed\n) || readme_failed=1\n")
		}
	}
	script.WriteString("exit $readme_failed\n")

	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script.String())
	// The whole session is one process group, so a timeout kills what the
	// examples started too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	cmd.Dir = filepath.Join(env.root, "work")
	cmd.Env = env.vars
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	var failures []string
	for l := range strings.Lines(out.String()) {
		if strings.HasPrefix(l, "README-TEST: ") {
			failures = append(failures, strings.TrimSpace(strings.TrimPrefix(l, "README-TEST: ")))
		}
	}
	if err != nil || len(failures) > 0 {
		tail := out.String()
		if len(tail) > 8000 {
			tail = "…" + tail[len(tail)-8000:]
		}
		t.Errorf("README examples failed (%v):\n%s\n\noutput:\n%s", err, strings.Join(failures, "\n"), tail)
	}
	t.Logf("ran %d README commands", ran)
}

// readmeEnv is the sandbox the README's examples run in.
type readmeEnv struct {
	root string   // holds home/, work/, gopath/
	vars []string // the environment of the bash session
}

// readmeSandbox makes the empty home and working directory the README's
// examples run in, and their environment: only PATH and Go's caches come
// from the test's environment, so no DSH_* setting of the developer's leaks
// in. Nothing else is prepared: the examples make what they use.
func readmeSandbox(t *testing.T, repo string) readmeEnv {
	t.Helper()
	root := t.TempDir()
	home := filepath.Join(root, "home")
	work := filepath.Join(root, "work")
	for _, d := range []string{home, work, filepath.Join(root, "gopath")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	goEnv := func(name string) string {
		out, err := exec.Command("go", "env", name).Output()
		if err != nil {
			t.Fatalf("go env %s: %v", name, err)
		}
		return strings.TrimSpace(string(out))
	}
	// The examples' own temporary files (a nested `go test -run …` leaves
	// testscript's work root behind when a filter runs only some scripts)
	// go into a directory this test removes. It sits directly in the
	// system's temporary directory, not under t.TempDir's 0700 parent, so
	// tests the examples run as an unprivileged user can still reach it.
	tmp, err := os.MkdirTemp("", "dsh-readme-tmp-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	vars := []string{
		"PATH=" + os.Getenv("PATH"),
		"TMPDIR=" + tmp,
		"HOME=" + home,
		"GOPATH=" + filepath.Join(root, "gopath"),
		"GOCACHE=" + goEnv("GOCACHE"),
		"GOMODCACHE=" + goEnv("GOMODCACHE"),
		"GOFLAGS=" + os.Getenv("GOFLAGS"),
		"GOTOOLCHAIN=local",
		"README_REPO=" + repo,
		readmeNestedEnv + "=1",
	}
	for _, name := range []string{"GOPROXY", "GONOSUMDB", "GOPRIVATE", "CI", pgtest.EnvURL} {
		if v, ok := os.LookupEnv(name); ok {
			vars = append(vars, name+"="+v)
		}
	}
	return readmeEnv{root: root, vars: vars}
}
