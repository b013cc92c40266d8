package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/location"
)

// sourceFlags are --source and --source-cache, shared by the commands that
// can read a corpus in place instead of the database (list, diagnose,
// session show, session events). Each command declares them with one call
// and opens what it reads with open: the commands then run the same code
// whichever corpus it is. The forms offered are internal/location's.
type sourceFlags struct {
	cmd   *cobra.Command
	spec  string
	cache string
	// strict makes a source that holds no session an error (list
	// --strict), not a warning.
	strict bool
}

func addSourceFlags(cmd *cobra.Command) *sourceFlags {
	s := &sourceFlags{cmd: cmd}
	cmd.Flags().StringVar(&s.spec, "source", "",
		"read a corpus in place instead of the database, read-only: "+sourceFlagHelp())
	cmd.Flags().StringVar(&s.cache, "source-cache", "",
		"DSH's projection cache at `PATH` — the rc.8 file session_projcache.json or the per-record directory storages/session_projcache — used as the projection cache of a --source "+location.CachePrefixes()+" (DSH's own corpora)")
	_ = cmd.RegisterFlagCompletionFunc("source", completeSourcePrefix)
	return s
}

// sourceFlagHelp is --source's help: every registered form, the first one's
// argument named as the flag's value.
func sourceFlagHelp() string {
	return "`SOURCE` is " + location.SourceHelp() + "; DSH's own corpora list every child inactive"
}

// completeSourcePrefix offers the source forms' prefixes until one is
// typed; the path after it is the shell's to complete.
func completeSourcePrefix(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	var out []cobra.Completion
	for _, s := range location.Schemes(location.SourceUse) {
		if p := s.Prefix(); len(toComplete) < len(p) && p[:len(toComplete)] == toComplete {
			out = append(out, cobra.CompletionWithDesc(p, s.Help))
		}
	}
	if len(out) == 0 {
		return nil, cobra.ShellCompDirectiveDefault
	}
	return out, cobra.ShellCompDirectiveNoSpace | cobra.ShellCompDirectiveNoFileComp
}

// open opens what the command reads, read-only: the source when --source is
// given (--source-cache alone is a usage error), the database otherwise.
// focus is the one session the command reads about, with its children
// (location.Options.Focus), or "".
func (s *sourceFlags) open(ctx context.Context, a *app, focus string) (*location.Corpus, error) {
	flags := s.cmd.Flags()
	if err := refuseEmptyFlags(s.cmd, "source", "source-cache"); err != nil {
		return nil, err
	}
	cfg, err := a.config()
	if err != nil {
		return nil, err
	}
	opts := a.locationOptions(cfg)
	if !flags.Changed("source") {
		if flags.Changed("source-cache") {
			return nil, dsherr.New(dsherr.Usage, "--source-cache needs --source")
		}
		return location.Open(ctx, cfg.DB, opts)
	}
	spec, err := location.ParseSource(s.spec)
	if err != nil {
		return nil, err
	}
	opts.CacheFile, opts.Strict, opts.Focus = s.cache, s.strict, focus
	return location.Open(ctx, spec, opts)
}

// testSourceEnumerated, set only by tests, runs once a --source or an
// import source has been enumerated and before any of its logs is read:
// the damage catalogue removes a session's file there, the moment a file
// that vanishes under a running dsh would, which no test can otherwise
// reach.
var testSourceEnumerated func(spec location.Spec)

func sourceEnumerated(spec location.Spec) {
	if testSourceEnumerated != nil {
		testSourceEnumerated(spec)
	}
}

// closeCorpus closes the corpus and keeps the first error.
func closeCorpus(c *location.Corpus, err *error) {
	if cerr := c.Close(); cerr != nil && *err == nil {
		*err = cerr
	}
}
