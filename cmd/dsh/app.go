package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/dsh-project/dsh/internal/corpus"
	"github.com/dsh-project/dsh/internal/debuglog"
	"github.com/dsh-project/dsh/internal/dshcompat"
	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/location"
	"github.com/dsh-project/dsh/internal/render"
)

// commands builds every top-level command. A new command is one file with a
// newXxxCmd(*app) constructor and one line here.
var commands = []func(*app) *cobra.Command{
	newInitCmd,
	newVersionCmd,
	newConfigCmd,
	newSessionCmd,
	newCacheCmd,
	newListCmd,
	newDemoCmd,
	newDiagnoseCmd,
	newDevCmd,
	newStartCmd,
	newResumeCmd,
	newLeaseCmd,
	newImportCmd,
	newExportCmd,
	newServeCmd,
	newUsageCmd,
	newSearchCmd,
}

// app is what every command runs with: the process's streams and the
// configuration, resolved on first use. Nothing in it is global, so tests run
// many commands in one process.
type app struct {
	// interrupted is the signal that cancelled the command, if one did:
	// the CANCELLED message names it.
	interrupted    *interruption
	stdin          io.Reader
	stdout, stderr io.Writer
	stdoutTTY      bool
	// out is stdout as commands print to it, clearing any progress
	// indicator first (stdout writes through it).
	out *resultWriter
	now func() time.Time

	globalFlags *pflag.FlagSet
	cfg         *config
	// started is set once cobra has parsed flags and arguments and handed
	// control to a command; an uncoded error before that is a usage error.
	started bool
	// output is the format the running command prints in; with JSON the
	// error report goes to stdout as JSON too.
	output render.Format
	// quiet drops warnings: shell completion must print nothing but
	// candidates.
	quiet bool
	// migration is how a migration's back-fill draws its progress (init
	// --progress forces the bar).
	migration progressMode
}

// Main runs dsh with args (without the program name) and returns the exit
// status.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return run(ctx, args, stdin, stdout, stderr, time.Now)
}

// run is Main with the clock as a parameter, so tests can pin the times dsh
// records (createdAt, end-seed time) and compare output with golden files.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, now func() time.Time) int {
	out := &resultWriter{w: stdout}
	a := &app{
		stdin:     stdin,
		stdout:    out,
		stderr:    stderr,
		stdoutTTY: isTerminal(stdout),
		now:       now,
		out:       out,
	}
	root := a.newRootCmd()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(out)
	root.SetErr(stderr)
	if err := unknownCommand(root, args); err != nil {
		return a.exit(err)
	}
	// A command that completed despite a late signal reports success: its
	// work is done, and 130 would tell the caller otherwise.
	err := root.ExecuteContext(ctx)
	var sig *interruption
	if errors.As(context.Cause(ctx), &sig) {
		a.interrupted = sig
	}
	return a.exit(err)
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func (a *app) newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "dsh",
		Short: "Offline tool for DeepSeek Harness session corpora",
		Long: `dsh keeps DeepSeek Harness (DSH) sessions in one SQLite file and starts,
resumes, lists and diagnoses subagent children the way DSH does, offline.

` + exitStatusHelp(rootExitLines...),
		SilenceErrors: true,
		SilenceUsage:  true,
		Args:          cobra.ArbitraryArgs,
	}
	version := root.Flags().Bool("version", false, "print dsh's version, as dsh version does")
	root.RunE = func(cmd *cobra.Command, args []string) error {
		if *version && len(args) == 0 {
			p, err := a.printer(render.Table)
			if err != nil {
				return err
			}
			return printVersion(p)
		}
		return groupRunE(cmd, args)
	}
	root.SuggestionsMinimumDistance = suggestionDistance
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return &dsherr.Error{Code: dsherr.Usage, Msg: err.Error(), Err: err}
	})
	pf := root.PersistentFlags()
	pf.String("db", "", "`DB` is the database (env DSH_DB; default $XDG_DATA_HOME/dsh/dsh.db): "+location.DBHelp())
	pf.String("config", "", "config file (env DSH_CONFIG; default $XDG_CONFIG_HOME/dsh/config.yaml)")
	pf.Bool("no-color", false, "never colour output (env DSH_NO_COLOR or NO_COLOR)")
	pf.Bool("debug", false, "log what dsh does (statements, timings, leases, listing rungs) on stderr (env DSH_DEBUG=1)")
	pf.Bool("no-progress", false, "never draw progress on stderr (env DSH_NO_PROGRESS=1)")
	pf.String("dsh-compat", "", "whose rules list and diagnose follow: "+strings.Join(dshcompat.Names(), ", ")+" (env DSH_COMPAT; default "+string(dshcompat.Default)+")")
	a.globalFlags = pf
	for _, newCmd := range commands {
		root.AddCommand(newCmd(a))
	}
	a.markStart(root)
	a.addCompletions(root)
	// A persistent flag is registered once, on the command that declares it.
	_ = root.RegisterFlagCompletionFunc("dsh-compat", cobra.FixedCompletions(dshcompat.Names(), cobra.ShellCompDirectiveNoFileComp))
	return root
}

// markStart makes every command record that cobra has parsed its flags and
// arguments and handed over control (see app.started). Wrapping RunE, rather
// than a persistent hook, leaves the hooks free for commands to use.
func (a *app) markStart(c *cobra.Command) {
	if run := c.RunE; run != nil {
		c.RunE = func(cmd *cobra.Command, args []string) error {
			a.started = true
			if log := a.debugLogger(); log != nil {
				cmd.SetContext(debuglog.With(cmd.Context(), log))
				start := time.Now()
				defer func() {
					log.Debug("command finished", slog.String("command", cmd.CommandPath()), slog.Duration("took", time.Since(start)))
				}()
			}
			return run(cmd, args)
		}
	}
	for _, sub := range c.Commands() {
		a.markStart(sub)
	}
}

// debugLogger is the --debug / DSH_DEBUG logger: slog text lines on
// stderr, never stdout, so results stay clean. nil when debugging is off.
func (a *app) debugLogger() *slog.Logger {
	on, _ := a.globalFlags.GetBool("debug")
	if !on && !envTrue("DSH_DEBUG") {
		return nil
	}
	return slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// envTrue reports whether the environment variable is set to a true value
// (1, t, true, …; see strconv.ParseBool).
func envTrue(name string) bool {
	b, err := strconv.ParseBool(os.Getenv(name))
	return err == nil && b
}

// config returns the effective configuration, resolved on first use: help
// never needs it, and a command reports a bad setting as its own error.
func (a *app) config() (*config, error) {
	if a.cfg == nil {
		cfg, err := loadConfig(a.globalFlags, a.warn)
		if err != nil {
			return nil, err
		}
		a.cfg = cfg
	}
	return a.cfg, nil
}

// profile is the --dsh-compat profile the command follows (config dshCompat,
// env DSH_COMPAT).
func (a *app) profile() (dshcompat.Profile, error) {
	cfg, err := a.config()
	if err != nil {
		return "", err
	}
	return cfg.DSHCompat.Or(), nil
}

// warn reports a problem that does not stop the command, on stderr.
func (a *app) warn(msg string) {
	if a.quiet {
		return
	}
	fmt.Fprintf(a.stderr, "dsh: warning: %s\n", render.Escape(msg))
}

// printer returns the printer for the running command's results in format f.
func (a *app) printer(f render.Format) (*render.Printer, error) {
	a.output = f
	cfg, err := a.config()
	if err != nil {
		return nil, err
	}
	return render.New(a.stdout, render.Options{Format: f, TTY: a.stdoutTTY, Color: colorEnabled(cfg, a.stdoutTTY, os.Getenv),
		UTF8: utf8Locale(os.Getenv)}), nil
}

// utf8Locale reports whether the locale's character set is UTF-8: the first
// of LC_ALL, LC_CTYPE and LANG that is set decides, as for any C program.
func utf8Locale(getenv func(string) string) bool {
	for _, name := range []string{"LC_ALL", "LC_CTYPE", "LANG"} {
		if v := getenv(name); v != "" {
			v = strings.ToLower(v)
			return strings.Contains(v, "utf-8") || strings.Contains(v, "utf8")
		}
	}
	return false
}

// colorEnabled decides whether output may be coloured. NO_COLOR (non-empty)
// wins over everything, including CLICOLOR_FORCE (https://no-color.org);
// then --no-color / noColor; a dumb terminal gets none; CLICOLOR_FORCE=1
// (any value but "0") colours a pipe too; otherwise only a terminal is
// coloured.
func colorEnabled(cfg *config, tty bool, getenv func(string) string) bool {
	switch {
	case getenv("NO_COLOR") != "", cfg.NoColor, getenv("TERM") == "dumb":
		return false
	case getenv("CLICOLOR_FORCE") != "" && getenv("CLICOLOR_FORCE") != "0":
		return true
	}
	return tty
}

// newGroupCmd is a command that only holds subcommands. Run bare, it prints
// its help; run with anything else, it is a usage error (cobra would print
// the help and succeed).
func newGroupCmd(use, short, long string, children ...*cobra.Command) *cobra.Command {
	c := &cobra.Command{
		Use:   use,
		Short: short,
		Long:  long + "\n\n" + exitStatusHelp(),
		Args:  cobra.ArbitraryArgs,
		RunE:  groupRunE,

		SuggestionsMinimumDistance: suggestionDistance,
	}
	c.AddCommand(children...)
	return c
}

// suggestionDistance is how many edits away a mistyped command may be for
// dsh to suggest the real one.
const suggestionDistance = 2

func groupRunE(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return cmd.Help()
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += " (did you mean " + strings.Join(quoteAll(s), " or ") + "?)"
	}
	return dsherr.New(dsherr.Usage, "%s", msg)
}

// unknownCommand reports a mistyped command before any flag is parsed:
// cobra parses the flags of the last command it recognised (dsh itself, or
// a group such as dsh session), so `dsh lsit --parent x` would otherwise be
// an unknown --parent, sending the user after the wrong word. A group's
// only positional arguments are its subcommands' names (cobra's completion
// command included, which would print its help and succeed).
func unknownCommand(root *cobra.Command, args []string) error {
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	cmd, rest, err := root.Find(args)
	if err != nil || !cmd.HasSubCommands() {
		return nil
	}
	switch word := firstPositional(cmd, rest); word {
	case "", cobra.ShellCompRequestCmd, cobra.ShellCompNoDescRequestCmd:
		// cobra adds its completion requests only as it executes.
	default:
		return groupRunE(cmd, []string{word})
	}
	return nil
}

// firstPositional is the first argument that is neither a flag nor a
// flag's value, "" when there is none or when a flag cmd does not know
// comes first (whether it takes a value is unknown, and cobra names it).
func firstPositional(cmd *cobra.Command, args []string) string {
	lookup := func(name string) *pflag.Flag {
		if f := cmd.Flags().Lookup(name); f != nil {
			return f
		}
		return cmd.InheritedFlags().Lookup(name)
	}
	shorthand := func(c string) *pflag.Flag {
		if f := cmd.Flags().ShorthandLookup(c); f != nil {
			return f
		}
		return cmd.InheritedFlags().ShorthandLookup(c)
	}
	for i := 0; i < len(args); i++ {
		arg := args[i]
		switch {
		case arg == "--":
			if i+1 < len(args) {
				return args[i+1]
			}
			return ""
		case strings.HasPrefix(arg, "--"):
			name, _, hasValue := strings.Cut(arg[2:], "=")
			f := lookup(name)
			if f == nil {
				return ""
			}
			if !hasValue && f.NoOptDefVal == "" {
				i++
			}
		case strings.HasPrefix(arg, "-") && len(arg) > 1:
			f := shorthand(arg[1:2])
			if f == nil {
				return ""
			}
			if len(arg) == 2 && f.NoOptDefVal == "" {
				i++
			}
		default:
			return arg
		}
	}
	return ""
}

func quoteAll(ss []string) []string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	return q
}

// exactArgs requires exactly the named positional arguments.
func exactArgs(names ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) == len(names) {
			return nil
		}
		want := "no arguments"
		if len(names) > 0 {
			want = strings.Join(names, " ")
		}
		return dsherr.New(dsherr.Usage, "%s: want %s, got %d argument(s)", cmd.CommandPath(), want, len(args))
	}
}

// refuseEmptyFlags rejects string flags given explicitly as "": for these
// flags an empty value means "use the default", which the user did not ask
// for by typing the flag.
func refuseEmptyFlags(cmd *cobra.Command, names ...string) error {
	for _, name := range names {
		f := cmd.Flags().Lookup(name)
		if f.Changed && f.Value.String() == "" {
			return dsherr.New(dsherr.InvalidInput, "--%s: empty value", name)
		}
	}
	return nil
}

// parseScope reads a --scope value (list, diagnose, export): anything but a
// scope's name is a usage error naming the valid ones.
func parseScope(value string) (corpus.Scope, error) {
	s, err := corpus.ParseScope(value)
	if err != nil {
		return 0, dsherr.Wrap(dsherr.Usage, err, "--scope")
	}
	return s, nil
}
