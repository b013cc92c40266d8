package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the pgx database/sql driver, for the sql command on PostgreSQL
	"github.com/klauspost/compress/zstd"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/dshfixtures"
	"github.com/dsh-project/dsh/internal/pgstore"
	"github.com/dsh-project/dsh/internal/pgtest"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/sqlitepersist"
	"github.com/dsh-project/dsh/internal/unprivileged"
)

var update = flag.Bool("update", false, "rewrite the golden output in testdata/script/*.txtar")

// fixturesDir is DSH's own corpora, read in place (never copied).
const fixturesDir = "../../../shared/fixtures"

// testNowEnv pins dsh's clock in scripts (epoch milliseconds) so that
// recorded times, and so golden output, are reproducible.
const testNowEnv = "DSH_TEST_NOW_MS"

// testUncancellableEnv, when set, runs the command with a context the first
// SIGINT/SIGTERM does not cancel (see dshCommand).
const testUncancellableEnv = "DSH_TEST_UNCANCELLABLE"

func TestMain(m *testing.M) {
	testscript.Main(reportingM{m}, map[string]func(){"dsh": dshCommand})
}

// reportingM runs the tests and then reports the scripts that skipped their
// checks against DSH's fixtures (testscript.Main exits with what Run returns).
type reportingM struct{ m *testing.M }

func (r reportingM) Run() int { return dshfixtures.Report(r.m.Run()) }

// dshCommand is the dsh program as scripts run it: a real subprocess
// executing Main, with the clock pinned when the script asks for it.
func dshCommand() {
	ctx, stop := interruptContext(context.Background(), os.Stderr, os.Exit)
	now := time.Now
	if v := os.Getenv(testNowEnv); v != "" {
		ms, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s=%q: %v\n", testNowEnv, v, err)
			os.Exit(100)
		}
		now = func() time.Time { return time.UnixMilli(ms) }
	}
	if os.Getenv(testUncancellableEnv) != "" {
		// Signals are still handled, but the command never sees the first
		// one: a stand-in for a command stuck where it cannot notice
		// cancellation, which only the second signal can end.
		ctx = context.Background()
	}
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, now)
	stop()
	os.Exit(code)
}

func TestScripts(t *testing.T) {
	testscript.Run(t, scriptParams(t, nil))
}

// TestScriptsPostgres runs the scripts again with DSH_DB naming a fresh
// PostgreSQL database of their own: the CLI must print the same on both
// backends. Scripts see the condition [postgres] (and [sqlite] on the
// default run); where they compare the SQLite file to show nothing was
// written, the [postgres] branch compares pgdigest's output instead. The
// scripts in scriptsNotOnPostgres are skipped with the reason: they test
// what only SQLite has (docs/postgres.md, "Not done yet").
func TestScriptsPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the same scripts run on SQLite in TestScripts; go test ./... runs them on PostgreSQL too")
	}
	admin := pgtest.AdminURL(t)
	testscript.Run(t, scriptParams(t, func(env *testscript.Env) error {
		name := strings.TrimPrefix(filepath.Base(env.WorkDir), "script-")
		if why, ok := scriptsNotOnPostgres[name]; ok {
			env.T().Skip("not yet run on PostgreSQL: " + why)
		}
		url, drop, err := pgtest.CreateDatabase(context.Background(), admin)
		if err != nil {
			return err
		}
		env.Defer(func() {
			if err := drop(); err != nil {
				env.T().Fatal(err)
			}
		})
		env.Setenv("DSH_DB", url)
		env.Setenv(scriptBackendEnv, "postgres")
		return nil
	}))
}

// scriptsNotOnPostgres are the scripts TestScriptsPostgres skips, and why.
var scriptsNotOnPostgres = map[string]string{
	"errors": "exercises SQLite file errors (permissions, symlinks, foreign files)",
}

// scriptBackendEnv tells script commands (sql, load-jsonl) which backend
// $DSH_DB is on.
const scriptBackendEnv = "DSH_SCRIPT_BACKEND"

// scriptParams is the suite's setup; backend, when set, points the script
// at another backend after the SQLite defaults are in place.
func scriptParams(t *testing.T, backend func(env *testscript.Env) error) testscript.Params {
	fixtures, err := filepath.Abs(fixturesDir)
	if err != nil {
		t.Fatal(err)
	}
	_, statErr := os.Stat(fixtures)
	if statErr != nil {
		noteFixtureScripts(t)
	}
	// testscript removes its default work root only once every script of
	// the run has ended, so a run filtered to some scripts (-run
	// 'TestScripts/name') would leave it in $TMPDIR: the root is this
	// test's own, removed when the test and its scripts have ended.
	root, err := os.MkdirTemp("", "dsh-scripts-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	return testscript.Params{
		WorkdirRoot:         root,
		Dir:                 filepath.Join("testdata", "script"),
		UpdateScripts:       *update && backend == nil,
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			env.Setenv("HOME", filepath.Join(env.WorkDir, "home"))
			env.Setenv(testNowEnv, "1789000000000")
			env.Setenv("DSH_DB", filepath.Join(env.WorkDir, "dsh.db"))
			env.Setenv(scriptBackendEnv, "sqlite")
			env.Setenv("FIXTURES", fixtures)
			if _, err := unprivileged.Lookup(); err != nil {
				env.Setenv("NO_UNPRIVILEGED", "cannot run as an unprivileged user: "+err.Error())
			}
			if backend != nil {
				return backend(env)
			}
			return nil
		},
		Condition: func(cond string) (bool, error) {
			switch cond {
			case "fixtures":
				return statErr == nil, nil
			case "unprivileged":
				_, err := unprivileged.Lookup()
				return err == nil, nil
			case "postgres":
				return backend != nil, nil
			case "sqlite":
				return backend == nil, nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		Cmds: map[string]func(*testscript.TestScript, bool, []string){
			"status":     cmdStatus,
			"perm":       cmdPerm,
			"load-jsonl": cmdLoadJSONL,
			"sql":        cmdSQL,
			"zstd-bomb":  cmdZstdBomb,
			"pgdigest":   cmdPGDigest,
			// unprivileged N PROG ARGS... is status run as a user file
			// permissions bind (nobody when the suite runs as root).
			"unprivileged": cmdUnprivileged,
		},
	}
}

// scriptDB is where a script command's database argument points: the
// script's own database file (dsh.db) is $DSH_DB on whichever backend the
// run uses; any other name is a SQLite file in the script's directory.
func scriptDB(ts *testscript.TestScript, arg string) (addr string, postgres bool) {
	path := ts.MkAbs(arg)
	if path == filepath.Join(ts.Getenv("WORK"), "dsh.db") && ts.Getenv(scriptBackendEnv) == "postgres" {
		return ts.Getenv("DSH_DB"), true
	}
	return path, false
}

// openScriptDB opens a script command's database for writing.
func openScriptDB(ts *testscript.TestScript, arg string) backend.Backend {
	ctx := context.Background()
	addr, postgres := scriptDB(ts, arg)
	if postgres {
		s, err := pgstore.Open(ctx, addr)
		ts.Check(err)
		return s
	}
	s, err := sqlitepersist.Open(ctx, addr, sqlitepersist.Options{})
	ts.Check(err)
	return s
}

// noteFixtureScripts counts, for dshfixtures.Report, the scripts that skip
// their checks against DSH's corpora when the fixtures are absent.
func noteFixtureScripts(t *testing.T) {
	scripts, err := filepath.Glob(filepath.Join("testdata", "script", "*.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range scripts {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte("fixtures] ")) {
			dshfixtures.NoteSkipped("script " + filepath.Base(f))
		}
	}
}

// status N PROG ARGS... runs PROG and fails unless it exits with status N;
// its stdout and stderr are then checked like exec's.
func cmdStatus(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: status N program [args...]")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("run %s: %v", args[1], err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited with status %d, want %d", args[1], got, want)
	}
}

// unprivileged N PROG ARGS... runs PROG (a command on the script's PATH,
// such as dsh) as an unprivileged user, from the script's directory with the
// script's environment, and fails unless it exits with status N; stdout and
// stderr are then checked as after exec. When the suite runs as root (as CI
// does) that user is nobody, so a read-only directory binds dsh as it would a
// user; the script's directories are made searchable (o+x) for it. Where no
// unprivileged user can be had, the condition [unprivileged] is false and
// $NO_UNPRIVILEGED says why, for the script's skip.
func cmdUnprivileged(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: unprivileged N program [args...]")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	u, err := unprivileged.Lookup()
	if err != nil {
		ts.Fatalf("cannot run as an unprivileged user (skip first: [!unprivileged] skip $NO_UNPRIVILEGED): %v", err)
	}
	src, err := exec.LookPath(args[1])
	ts.Check(err)
	binDir, err := os.MkdirTemp("", "dsh-unprivileged-bin")
	ts.Check(err)
	ts.Defer(func() { os.RemoveAll(binDir) })
	ts.Check(os.Chmod(binDir, 0o755))
	ts.Check(u.ReachDir(binDir))
	exe, err := unprivileged.InstallIn(binDir, src, filepath.Base(src))
	ts.Check(err)
	dir := ts.MkAbs(".")
	ts.Check(u.ReachDir(dir))

	cmd := u.Command(context.Background(), exe, args[2:]...)
	cmd.Dir = dir
	cmd.Env = scriptEnv(ts)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	got := 0
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("run %s as %s: %v", args[1], u.Name, err)
		}
		got = ee.ExitCode()
	}
	ts.Stdout().Write(stdout.Bytes())
	ts.Stderr().Write(stderr.Bytes())
	if got != want {
		ts.Fatalf("%s (as %s) exited with status %d, want %d\nstderr: %s", args[1], u.Name, got, want, stderr.String())
	}
}

// scriptEnv is the script's environment as far as dsh reads it: the
// variables Setup sets, the configuration file and every setting's
// variable, with their current values in the script.
func scriptEnv(ts *testscript.TestScript) []string {
	keys := []string{"PATH", "HOME", "TMPDIR", "WORK", "FIXTURES", testNowEnv, configEnv, "XDG_CONFIG_HOME", "XDG_DATA_HOME", "NO_COLOR"}
	var c config
	for _, s := range c.settings("") {
		keys = append(keys, s.envVar())
	}
	var env []string
	for _, k := range keys {
		if v := ts.Getenv(k); v != "" {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// perm PATH MODE fails unless PATH's permission bits are MODE (octal).
func cmdPerm(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: perm path mode")
	}
	want, err := strconv.ParseUint(args[1], 8, 32)
	ts.Check(err)
	fi, err := os.Stat(ts.MkAbs(args[0]))
	ts.Check(err)
	if got := fi.Mode().Perm(); got != fs.FileMode(want) {
		ts.Fatalf("%s has mode %#o, want %#o", args[0], got, want)
	}
}

// zstd-bomb HEADER OUT MIB writes the DSH zstd session file OUT: the
// header line in the file HEADER as its first frame, then one frame of a
// few kilobytes, built by hand from RLE blocks without a declared size,
// that decodes to MIB MiB of 128 KiB lines ("x…x\n").
func cmdZstdBomb(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: zstd-bomb header out mib")
	}
	header, err := os.ReadFile(ts.MkAbs(args[0]))
	ts.Check(err)
	mib, err := strconv.Atoi(args[2])
	ts.Check(err)
	enc, err := zstd.NewWriter(nil)
	ts.Check(err)
	out := enc.EncodeAll(header, nil)
	out = append(out, 0x28, 0xB5, 0x2F, 0xFD, 0x00, 0x58) // no content size, 2 MiB window
	rle := func(b byte, n int, last bool) {
		h := uint32(n)<<3 | 1<<1
		if last {
			h |= 1
		}
		out = append(out, byte(h), byte(h>>8), byte(h>>16), b)
	}
	for i := range mib * 8 {
		rle('x', 128<<10-1, false)
		rle('\n', 1, i == mib*8-1)
	}
	ts.Check(os.MkdirAll(filepath.Dir(ts.MkAbs(args[1])), 0o755))
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), out, 0o644))
}

// load-jsonl DB FILE... imports DSH JSONL session files (header line, then
// one event per line) into the database DB, faithfully: an invalid log is
// stored as it is, and a line that does not decode starts a torn tail, as
// when DSH's reader meets a torn write. {{cwd}}, the placeholder in DSH's
// snapshot fixtures, becomes $WORK.
func cmdLoadJSONL(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: load-jsonl db file...")
	}
	ctx := context.Background()
	s := openScriptDB(ts, args[0])
	defer func() { ts.Check(s.Close()) }()
	for _, file := range args[1:] {
		text := strings.ReplaceAll(ts.ReadFile(file), "{{cwd}}", ts.Getenv("WORK"))
		lines := bytes.SplitAfter([]byte(text), []byte("\n"))
		h, err := session.ParseHeaderJSON(bytes.TrimSpace(lines[0]))
		if err != nil {
			ts.Fatalf("%s: header: %v", file, err)
		}
		var events []session.Event
		var tail *backend.TornTail
		for i, line := range lines[1:] {
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			var e session.Event
			if err := json.Unmarshal(line, &e); err != nil {
				tail = &backend.TornTail{FromSeq: int64(len(events)), Reason: err.Error(), Raw: bytes.Join(lines[1+i:], nil)}
				break
			}
			events = append(events, e)
		}
		_, err = s.ImportSession(ctx, h, events, tail)
		ts.Check(err)
	}
}

// sql DB STATEMENT runs one SQL statement against a database the way a
// user with the sqlite3 shell (or psql, when the run is on PostgreSQL) would,
// to damage or inspect what dsh wrote. Rows of a query are printed to
// stdout, one per line, columns tab-separated. Scripts keep to SQL both
// dialects read, or branch on [postgres].
func cmdSQL(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: sql db statement")
	}
	addr, postgres := scriptDB(ts, args[0])
	driver, dsn := "sqlite", "file:"+addr
	if postgres {
		driver, dsn = "pgx", addr
	}
	db, err := sql.Open(driver, dsn)
	ts.Check(err)
	defer db.Close()
	if verb := strings.ToUpper(strings.Fields(args[1])[0]); verb != "SELECT" && verb != "PRAGMA" {
		_, err := db.Exec(args[1])
		ts.Check(err)
		return
	}
	rows, err := db.Query(args[1])
	ts.Check(err)
	defer rows.Close()
	cols, err := rows.Columns()
	ts.Check(err)
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		ts.Check(rows.Scan(ptrs...))
		parts := make([]string, len(vals))
		for i, v := range vals {
			if b, ok := v.([]byte); ok {
				v = string(b)
			}
			parts[i] = fmt.Sprint(v)
		}
		fmt.Fprintln(ts.Stdout(), strings.Join(parts, "\t"))
	}
	ts.Check(rows.Err())
}

// pgdigest prints, for the script's PostgreSQL database, one line per table
// of its schema: the name, the row count and an md5 of every row's text in a
// fixed order. Scripts compare it before and after a read-only command, the
// PostgreSQL counterpart of comparing the SQLite file byte for byte.
func cmdPGDigest(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: pgdigest")
	}
	if ts.Getenv(scriptBackendEnv) != "postgres" {
		ts.Fatalf("pgdigest needs the postgres backend")
	}
	db, err := sql.Open("pgx", ts.Getenv("DSH_DB"))
	ts.Check(err)
	defer db.Close()
	rows, err := db.Query(`SELECT table_name FROM information_schema.tables
		WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name`)
	ts.Check(err)
	var tables []string
	for rows.Next() {
		var name string
		ts.Check(rows.Scan(&name))
		tables = append(tables, name)
	}
	ts.Check(rows.Err())
	rows.Close()
	if len(tables) == 0 {
		fmt.Fprintln(ts.Stdout(), "(no tables)")
		return
	}
	for _, table := range tables {
		var n int64
		var sum sql.NullString
		q := fmt.Sprintf(`SELECT count(*), md5(string_agg(t::text, E'\\n' ORDER BY t::text)) FROM %q t`, table)
		ts.Check(db.QueryRow(q).Scan(&n, &sum))
		fmt.Fprintf(ts.Stdout(), "%s\t%d\t%s\n", table, n, sum.String)
	}
}
