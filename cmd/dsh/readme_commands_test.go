package main

import (
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

// readmeText is the repository's README.
func readmeText(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// runnableCommands is the path of every command a user can run (not help,
// not hidden), found by walking the command tree.
func runnableCommands() [][]string {
	a := &app{stdout: io.Discard, stderr: io.Discard, now: time.Now}
	var out [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		for _, sub := range c.Commands() {
			if sub.Hidden || sub.Name() == "help" {
				continue
			}
			p := append(slices.Clone(path), sub.Name())
			if !sub.HasAvailableSubCommands() && sub.Runnable() {
				out = append(out, p)
			}
			walk(sub, p)
		}
	}
	walk(a.newRootCmd(), nil)
	return out
}

var readmeTableRowRE = regexp.MustCompile("(?m)^\\| `dsh ([^`]*)` \\|")

// The README's command table is where a newcomer learns what dsh can do:
// every command has a row, so one that lands without a row fails here
// (lease ls and serve once had none). A row names a command's words in
// order, alternatives joined by \| (`dsh cache stats\|verify`).
func TestReadmeCommandTableNamesEveryCommand(t *testing.T) {
	var rows [][]string
	for _, m := range readmeTableRowRE.FindAllStringSubmatch(readmeText(t), -1) {
		rows = append(rows, strings.Fields(strings.ReplaceAll(m[1], `\|`, "|")))
	}
	if len(rows) == 0 {
		t.Fatal("README has no command table (rows | `dsh …` | … |)")
	}
	names := func(row []string, cmd []string) bool {
		if len(row) < len(cmd) {
			return false
		}
		for i, w := range cmd {
			if !slices.Contains(strings.Split(row[i], "|"), w) {
				return false
			}
		}
		return true
	}
	cmds := runnableCommands()
	if len(cmds) < 10 {
		t.Fatalf("found only %d commands in the tree: %v", len(cmds), cmds)
	}
	for _, cmd := range cmds {
		if !slices.ContainsFunc(rows, func(row []string) bool { return names(row, cmd) }) {
			t.Errorf("README's command table has no row for dsh %s", strings.Join(cmd, " "))
		}
	}
}

var readmeCommandRE = regexp.MustCompile("`dsh ([a-z ]+)`")

// The README's --source section opens by naming the commands that take
// --source; it names each command that has the flag and no other.
func TestReadmeSourceSectionNamesEveryCommandTakingSource(t *testing.T) {
	text := readmeText(t)
	_, section, ok := strings.Cut(text, "### Reading a corpus in place")
	if !ok {
		t.Fatal("README has no section \"Reading a corpus in place\"")
	}
	sentence, _, ok := strings.Cut(section, "`--source` to read a corpus where it is")
	if !ok {
		t.Fatal("the README's --source section does not open with the commands taking `--source`")
	}
	var named []string
	for _, m := range readmeCommandRE.FindAllStringSubmatch(sentence, -1) {
		named = append(named, "dsh "+m[1])
	}
	slices.Sort(named)
	if want := commandsTakingSource(t); !slices.Equal(named, want) {
		t.Errorf("the README's --source section names %q; the commands taking --source are %q", named, want)
	}
}
