package main

import (
	"context"
	"errors"
	"strings"
	"time"
	"unicode"

	"github.com/spf13/cobra"

	"github.com/dsh-project/dsh/internal/corpus"
	"github.com/dsh-project/dsh/internal/report"
	"github.com/dsh-project/dsh/internal/session"
)

// Shell completion is cobra's (`dsh completion bash|zsh|fish|powershell`,
// served by the hidden __complete command). dsh adds the values a user cannot
// guess: session ids from the configured database, and the fixed vocabularies
// of its flags.

// Completion reads the database while the user waits at a prompt: at most
// completionTimeout and completionLimit ids, and any failure (no database, a
// bad config, a locked or damaged file) completes nothing rather than
// printing an error into the shell.
const (
	completionTimeout = 500 * time.Millisecond
	completionLimit   = 200
)

// idArgCommands take session ids as positional arguments.
var idArgCommands = map[string]bool{
	"dsh resume":         true,
	"dsh session show":   true,
	"dsh session events": true,
	"dsh session fork":   true,
	"dsh diagnose":       true,
	"dsh export":         true,
	"dsh cache verify":   true,
	"dsh cache rebuild":  true,
	"dsh usage":          true,
}

// singleIDArgCommands take exactly one id: once it is given, nothing more is
// completed.
var singleIDArgCommands = map[string]bool{
	"dsh resume":         true,
	"dsh session show":   true,
	"dsh session events": true,
	"dsh session fork":   true,
}

// idFlags are flags whose value is a session id.
var idFlags = []string{"parent"}

// flagValues are the fixed vocabularies of flags, by flag name; -o is
// registered per command by addOutputFlag, since each command prints its own
// set of formats.
var flagValues = map[string][]string{
	"scope":       corpus.ScopeNames(),
	"fail-on":     {"error", "warning", "info"},
	"state":       report.States,
	"compression": {"zstd", "none"},
	// start --mode shares the name: only the modes a child is started in.
	"mode":     {"continuable", "one-shot"},
	"provider": {"echo", "exec"},
	"by":       {"model"},
}

// addCompletions registers id and value completion on every command of the
// tree below c.
func (a *app) addCompletions(c *cobra.Command) {
	path := c.CommandPath()
	if idArgCommands[path] && c.ValidArgsFunction == nil {
		single := singleIDArgCommands[path]
		c.ValidArgsFunction = func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			if single && len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return a.completeSessionIDs(cmd, toComplete)
		}
	}
	for _, name := range idFlags {
		if c.Flags().Lookup(name) != nil {
			_ = c.RegisterFlagCompletionFunc(name, func(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
				return a.completeSessionIDs(cmd, toComplete)
			})
		}
	}
	for name, values := range flagValues {
		if c.Flags().Lookup(name) != nil {
			_ = c.RegisterFlagCompletionFunc(name, cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp))
		}
	}
	for _, sub := range c.Commands() {
		a.addCompletions(sub)
	}
}

// completable reports whether id can be offered to a shell: completions
// travel one per line and are inserted into the command line as typed, so
// an id a shell cannot take back as one word (blanks), or that would drive
// the terminal (control characters, bidirectional controls), is left out;
// such ids are still accepted when typed, quoted.
func completable(id string) bool {
	return checkSessionID("", id) == nil && !strings.ContainsFunc(id, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r)
	})
}

// errEnoughIDs stops the header scan once completionLimit ids were found.
var errEnoughIDs = errors.New("enough ids")

// completeSessionIDs offers the ids in the configured database that start
// with prefix, read-only and bounded (see completionTimeout).
func (a *app) completeSessionIDs(cmd *cobra.Command, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
	const directive = cobra.ShellCompDirectiveNoFileComp
	a.quiet = true
	ctx, cancel := context.WithTimeout(cmd.Context(), completionTimeout)
	defer cancel()
	s, err := a.openStoreReadOnly(ctx)
	if err != nil {
		return nil, directive
	}
	defer s.Close()
	var ids []cobra.Completion
	// A scan cut short (the timeout, a read error) still offers the ids it
	// found: each of them exists.
	_ = s.ListHeaders(ctx, func(h session.Header) error {
		if strings.HasPrefix(h.ID, prefix) && completable(h.ID) {
			ids = append(ids, h.ID)
			if len(ids) >= completionLimit {
				return errEnoughIDs
			}
		}
		return nil
	})
	return ids, directive
}
