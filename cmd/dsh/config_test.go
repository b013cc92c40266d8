package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-project/dsh/internal/sqlitepersist"
)

func TestEnvName(t *testing.T) {
	tests := map[string]string{
		"db":                     "DSH_DB",
		"busyTimeoutMs":          "DSH_BUSY_TIMEOUT_MS",
		"noColor":                "DSH_NO_COLOR",
		"cache.writeEveryEvents": "DSH_CACHE_WRITE_EVERY_EVENTS",
		"cache.writeIntervalMs":  "DSH_CACHE_WRITE_INTERVAL_MS",
		"lease.ttlMs":            "DSH_LEASE_TTL_MS",
	}
	for key, want := range tests {
		if got := envName(key); got != want {
			t.Errorf("envName(%q) = %q, want %q", key, got, want)
		}
	}
}

// effectiveConfig runs `dsh config -o json` and indexes the result by key.
func effectiveConfig(t *testing.T, args ...string) map[string]configSource {
	t.Helper()
	stdout, stderr, code := runDsh(t, append(args, "config", "-o", "json")...)
	if code != 0 {
		t.Fatalf("dsh config: exit %d, stderr %q", code, stderr)
	}
	var rows []configSource
	if err := json.Unmarshal([]byte(stdout), &rows); err != nil {
		t.Fatalf("dsh config -o json printed %q: %v", stdout, err)
	}
	m := make(map[string]configSource, len(rows))
	for _, r := range rows {
		m[r.Key] = r
	}
	return m
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestConfigDefaults(t *testing.T) {
	home := isolateEnv(t)
	cfg := effectiveConfig(t)
	want := map[string]any{
		"db":                     filepath.Join(home, ".local", "share", "dsh", "dsh.db"),
		"busyTimeoutMs":          float64(5000),
		"output":                 "",
		"noColor":                false,
		"cache.writeEveryEvents": float64(200),
		"cache.writeIntervalMs":  float64(5000),
		"maxDepth":               float64(2),
		"coldConcurrency":        float64(4),
	}
	for key, v := range want {
		got := cfg[key]
		if got.Value != v || got.Source != "default" {
			t.Errorf("%s = %v from %q, want %v from default", key, got.Value, got.Source, v)
		}
	}
	if got := cfg["config"]; got.Value != filepath.Join(home, ".config", "dsh", "config.yaml") || got.Source != "default (absent)" {
		t.Errorf("config file = %v from %q", got.Value, got.Source)
	}
}

func TestConfigXDGDirs(t *testing.T) {
	isolateEnv(t)
	xdg := t.TempDir()
	t.Setenv("XDG_DATA_HOME", filepath.Join(xdg, "data"))
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(xdg, "config"))
	writeFile(t, filepath.Join(xdg, "config", "dsh", "config.yaml"), "maxDepth: 5\n")
	cfg := effectiveConfig(t)
	if got := cfg["db"].Value; got != filepath.Join(xdg, "data", "dsh", "dsh.db") {
		t.Errorf("db = %v, want under XDG_DATA_HOME", got)
	}
	if got := cfg["maxDepth"]; got.Value != float64(5) || got.Source != "file" {
		t.Errorf("maxDepth = %v from %q, want 5 from the XDG config file", got.Value, got.Source)
	}

	// A relative XDG directory is ignored, as the XDG spec requires.
	t.Setenv("XDG_DATA_HOME", "relative/data")
	if got := effectiveConfig(t)["db"].Value.(string); strings.Contains(got, "relative") {
		t.Errorf("db = %q: relative XDG_DATA_HOME was used", got)
	}
}

// Each layer overrides the one below it: default < file < env < flag.
func TestConfigPrecedence(t *testing.T) {
	home := isolateEnv(t)
	file := filepath.Join(home, "dsh.yaml")
	writeFile(t, file, "db: /from/file.db\nbusyTimeoutMs: 100\ncache:\n  writeEveryEvents: 7\nnoColor: false\n")

	cfg := effectiveConfig(t, "--config", file)
	if got := cfg["db"]; got.Value != "/from/file.db" || got.Source != "file" {
		t.Errorf("file layer: db = %v from %q", got.Value, got.Source)
	}
	if got := cfg["cache.writeEveryEvents"]; got.Value != float64(7) || got.Source != "file" {
		t.Errorf("nested file key: cache.writeEveryEvents = %v from %q", got.Value, got.Source)
	}
	if got := cfg["config"]; got.Value != file || got.Source != "flag --config" {
		t.Errorf("config = %v from %q", got.Value, got.Source)
	}

	t.Setenv("DSH_DB", "/from/env.db")
	t.Setenv("DSH_BUSY_TIMEOUT_MS", "250")
	t.Setenv("DSH_CACHE_WRITE_EVERY_EVENTS", "9")
	cfg = effectiveConfig(t, "--config", file)
	for key, want := range map[string]any{"db": "/from/env.db", "busyTimeoutMs": float64(250), "cache.writeEveryEvents": float64(9)} {
		if got := cfg[key]; got.Value != want || got.Source != "env "+envName(key) {
			t.Errorf("env layer: %s = %v from %q, want %v from env", key, got.Value, got.Source, want)
		}
	}

	cfg = effectiveConfig(t, "--config", file, "--db", "/from/flag.db", "--no-color")
	if got := cfg["db"]; got.Value != "/from/flag.db" || got.Source != "flag --db" {
		t.Errorf("flag layer: db = %v from %q", got.Value, got.Source)
	}
	if got := cfg["noColor"]; got.Value != true || got.Source != "flag --no-color" {
		t.Errorf("flag layer: noColor = %v from %q", got.Value, got.Source)
	}
}

func TestConfigFileFromEnv(t *testing.T) {
	home := isolateEnv(t)
	file := filepath.Join(home, "elsewhere.yaml")
	writeFile(t, file, "coldConcurrency: 11\n")
	t.Setenv(configEnv, file)
	cfg := effectiveConfig(t)
	if got := cfg["coldConcurrency"]; got.Value != float64(11) || got.Source != "file" {
		t.Errorf("coldConcurrency = %v from %q", got.Value, got.Source)
	}
	if got := cfg["config"].Source; got != "env DSH_CONFIG" {
		t.Errorf("config source = %q", got)
	}
}

func TestNoColor(t *testing.T) {
	isolateEnv(t)
	t.Setenv("NO_COLOR", "1")
	if got := effectiveConfig(t)["noColor"]; got.Value != true || got.Source != "env NO_COLOR" {
		t.Errorf("NO_COLOR=1: noColor = %v from %q", got.Value, got.Source)
	}
	// dsh's own variable is more specific than the cross-tool convention.
	t.Setenv("DSH_NO_COLOR", "false")
	if got := effectiveConfig(t)["noColor"]; got.Value != false || got.Source != "env DSH_NO_COLOR" {
		t.Errorf("DSH_NO_COLOR=false: noColor = %v from %q", got.Value, got.Source)
	}
}

func TestConfigErrors(t *testing.T) {
	home := isolateEnv(t)
	bad := filepath.Join(home, "bad.yaml")
	writeFile(t, bad, "db: [unclosed\n")
	tests := []struct {
		name    string
		env     map[string]string
		args    []string
		wantErr string
	}{
		{"explicit config file missing", nil, []string{"--config", filepath.Join(home, "missing.yaml")},
			"dsh: USAGE: config file " + filepath.Join(home, "missing.yaml") + " (flag --config)"},
		{"config file does not parse", nil, []string{"--config", bad},
			"dsh: INVALID_INPUT: config file " + bad + " (flag --config)"},
		{"DSH_CONFIG names a missing file", map[string]string{configEnv: filepath.Join(home, "nope.yaml")}, nil,
			"dsh: USAGE: config file " + filepath.Join(home, "nope.yaml") + " (env DSH_CONFIG)"},
		{"integer setting not a number", map[string]string{"DSH_BUSY_TIMEOUT_MS": "5s"}, nil,
			`dsh: INVALID_INPUT: config busyTimeoutMs (env DSH_BUSY_TIMEOUT_MS): "5s" is not a whole number`},
		{"integer below minimum", map[string]string{"DSH_COLD_CONCURRENCY": "0"}, nil,
			"dsh: INVALID_INPUT: config coldConcurrency (env DSH_COLD_CONCURRENCY): 0 is below the minimum 1"},
		{"boolean not a boolean", map[string]string{"DSH_NO_COLOR": "sometimes"}, nil,
			`dsh: INVALID_INPUT: config noColor (env DSH_NO_COLOR): "sometimes" is not a boolean`},
		{"unknown output format", map[string]string{"DSH_OUTPUT": "yaml"}, nil,
			`dsh: INVALID_INPUT: config output (env DSH_OUTPUT): unsupported output format "yaml"`},
		{"heartbeat not below ttl", map[string]string{"DSH_LEASE_TTL_MS": "1000", "DSH_LEASE_HEARTBEAT_MS": "1000"}, nil,
			"dsh: INVALID_INPUT: config lease.heartbeatMs (1000) must be smaller than lease.ttlMs (1000)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			_, stderr, code := runDsh(t, append(tt.args, "config")...)
			if code != exitUsage {
				t.Errorf("exit %d, want %d", code, exitUsage)
			}
			if !strings.HasPrefix(stderr, tt.wantErr) || strings.Count(stderr, "\n") != 1 {
				t.Errorf("stderr = %q, want one line starting %q", stderr, tt.wantErr)
			}
		})
	}
}

func TestConfigFileFractionRefused(t *testing.T) {
	home := isolateEnv(t)
	file := filepath.Join(home, "c.yaml")
	writeFile(t, file, "maxDepth: 1.5\n")
	_, stderr, code := runDsh(t, "--config", file, "config")
	if code != exitUsage || !strings.Contains(stderr, "config maxDepth (file): 1.5 is not a whole number") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}

func TestConfigUnknownKeyWarns(t *testing.T) {
	home := isolateEnv(t)
	file := filepath.Join(home, "c.yaml")
	writeFile(t, file, "maxDepht: 3\ncache:\n  writeEvery: 1\nLease:\n  TTL: 9000\n")
	_, stderr, code := runDsh(t, "--config", file, "config")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	// Keys are named as the file spells them, with the setting meant when
	// one is close (a typo), and without a guess when none is.
	for _, want := range []string{
		`unknown key "maxDepht" ignored (did you mean "maxDepth"?)`,
		`unknown key "cache.writeEvery" ignored` + "\n",
		`unknown key "Lease.TTL" ignored (did you mean "lease.ttlMs"?)`,
	} {
		if !strings.Contains(stderr, "dsh: warning: config file "+file+": "+want) {
			t.Errorf("no warning %q in %q", want, stderr)
		}
	}
}

// The output setting picks the format of commands that can print it and is
// ignored by the others; an explicit -o that a command cannot print is a
// usage error.
func TestOutputSetting(t *testing.T) {
	isolateEnv(t)
	t.Setenv("DSH_OUTPUT", "jsonl")
	stdout, stderr, code := runDsh(t, "config")
	if code != 0 || !strings.HasPrefix(stdout, `{"key":"config",`) {
		t.Errorf("config with output=jsonl: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	stdout, stderr, code = runDsh(t, "version")
	if code != 0 || !strings.HasPrefix(stdout, "version\t") {
		t.Errorf("version cannot print jsonl and should use its default: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	_, stderr, code = runDsh(t, "version", "-o", "jsonl")
	if code != exitUsage || !strings.HasPrefix(stderr, `dsh: USAGE: -o: unsupported output format "jsonl" (want table, tsv, json)`) {
		t.Errorf("version -o jsonl: exit %d, stderr %q", code, stderr)
	}
}

// busyTimeoutMs: 0 means "do not wait for another writer's lock", not
// "the default": the connections dsh opens carry busy_timeout 0.
func TestBusyTimeoutZeroHonoured(t *testing.T) {
	home := isolateEnv(t)
	t.Setenv("DSH_DB", filepath.Join(home, "dsh.db"))
	t.Setenv("DSH_BUSY_TIMEOUT_MS", "0")
	a := &app{stdout: io.Discard, stderr: io.Discard}
	a.newRootCmd()
	ctx := context.Background()
	s, err := a.openStore(ctx)
	if err != nil {
		t.Fatal(err)
	}
	closeSeedStore(t, s.(*sqlitepersist.Store))
	cat, err := a.openStoreReadOnly(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ro := cat.(*sqlitepersist.Store)
	defer closeSeedStore(t, ro)
	var got int
	if err := ro.Querier().QueryRowContext(ctx, "PRAGMA busy_timeout").Scan(&got); err != nil || got != 0 {
		t.Errorf("read-only store: busy_timeout %d (%v), want 0", got, err)
	}
	wcat, err := a.openStore(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w := wcat.(*sqlitepersist.Store)
	defer closeSeedStore(t, w)
	if err := w.Querier().QueryRowContext(ctx, "PRAGMA busy_timeout").Scan(&got); err != nil || got != 0 {
		t.Errorf("writable store: busy_timeout %d (%v), want 0", got, err)
	}
}
