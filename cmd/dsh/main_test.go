package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// runDsh runs dsh in-process and returns its output and exit status.
func runDsh(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(context.Background(), args, strings.NewReader(""), &out, &errOut, time.Now)
	return out.String(), errOut.String(), code
}

// isolateEnv points every default path into a temp dir and clears the
// variables dsh reads, so a test sees only what it sets itself.
func isolateEnv(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	for _, k := range []string{"XDG_CONFIG_HOME", "XDG_DATA_HOME", "NO_COLOR", configEnv} {
		t.Setenv(k, "")
	}
	var c config
	for _, s := range c.settings("") {
		t.Setenv(envName(s.key), "")
	}
	return home
}
