package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"

	"github.com/dsh-project/dsh/internal/dsherr"
)

// docsDate is the date printed in the man pages' footer. It is fixed so that
// the committed reference only changes when the commands do.
var docsDate = time.Date(2026, time.December, 1, 0, 0, 0, 0, time.UTC)

// genDocs writes the command reference generated from the command tree
// under root: one Markdown file per command into dir and one man page per
// command into dir/man. Files it wrote before for commands that no longer
// exist are removed, so dir holds exactly the current tree. (root is a
// parameter because the tree holds the command that calls this.)
func genDocs(root *cobra.Command, dir string) error {
	root.InitDefaultCompletionCmd()
	root.InitDefaultHelpCmd()
	var disable func(*cobra.Command)
	disable = func(c *cobra.Command) {
		c.DisableAutoGenTag = true // no generation timestamp in the files
		for _, sub := range c.Commands() {
			disable(sub)
		}
	}
	disable(root)
	manDir := filepath.Join(dir, "man")
	for _, pattern := range []string{filepath.Join(dir, "dsh*.md"), filepath.Join(manDir, "dsh*.1")} {
		old, err := filepath.Glob(pattern)
		if err != nil {
			return err
		}
		for _, f := range old {
			if err := os.Remove(f); err != nil {
				return err
			}
		}
	}
	if err := os.MkdirAll(manDir, 0o755); err != nil {
		return err
	}
	if err := doc.GenMarkdownTree(root, dir); err != nil {
		return fmt.Errorf("markdown reference: %w", err)
	}
	header := &doc.GenManHeader{Title: "DSH", Section: "1", Source: "dsh", Manual: "dsh manual", Date: &docsDate}
	if err := doc.GenManTree(root, header, manDir); err != nil {
		return fmt.Errorf("man pages: %w", err)
	}
	return nil
}

func newGenDocsCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "gen-docs DIR",
		Short: "Write the Markdown and man page reference of every command",
		Long: `Write the command reference generated from dsh's command tree: one Markdown
file per command into DIR and one man page per command into DIR/man,
replacing what an earlier run wrote there. scripts/gendocs runs it for
docs/cli, which a test keeps current.

` + exitStatusHelp(),
		Example: "  dsh dev gen-docs docs/cli",
		Args:    exactArgs("DIR"),
	}
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := genDocs(cmd.Root(), args[0]); err != nil {
			return dsherr.Wrap(dsherr.StoreUnavailable, err, "gen-docs %s", args[0])
		}
		fmt.Fprintf(a.stderr, "dsh: wrote the command reference to %s\n", args[0])
		return nil
	}
	return cmd
}
