package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/render"
	"github.com/dsh-project/dsh/internal/report"
)

// Exit statuses (design README, "Exit codes"). Like diff and grep: 1 means
// "looked, and the answer is no"; 2 and above mean "could not answer".
const (
	exitOK        = 0
	exitFound     = 1   // the command worked and found what the user asked to fail on
	exitUsage     = 2   // bad usage, invalid input or a refused request; nothing written
	exitStore     = 3   // the store or a source could not be read or written
	exitConflict  = 4   // another live process holds the child; nothing written
	exitCancelled = 130 // SIGINT or SIGTERM
)

// exitCodes maps every coded error to its exit status. A code missing here
// (added to dsherr later) exits with exitStore: dsh could not answer.
var exitCodes = map[dsherr.Code]int{
	dsherr.Cancelled:           exitCancelled,
	dsherr.Usage:               exitUsage,
	dsherr.InvalidInput:        exitUsage,
	dsherr.NotFound:            exitUsage,
	dsherr.NotResumable:        exitUsage,
	dsherr.Unauthorized:        exitUsage,
	dsherr.DuplicateChild:      exitUsage,
	dsherr.AlreadyExists:       exitUsage,
	dsherr.DepthExceeded:       exitUsage,
	dsherr.NotDelivered:        exitConflict,
	dsherr.StaleWriter:         exitConflict,
	dsherr.StoreUnavailable:    exitStore,
	dsherr.InvalidLog:          exitStore,
	dsherr.DescriptorMalformed: exitUsage, // resume refuses a child whose first own descriptor is malformed
	dsherr.UnsupportedFormat:   exitStore,
	dsherr.Internal:            exitStore,
}

// classify decides the stable code and exit status of err. started says
// whether a command's own code ran (an uncoded error before that comes from
// cobra's flag or argument parsing).
func classify(err error, started bool) (dsherr.Code, int) {
	if err == nil {
		return "", exitOK
	}
	code := report.ErrorCode(err)
	if code == dsherr.Internal && dsherr.CodeOf(err) == "" && !started {
		code = dsherr.Usage
	}
	status, ok := exitCodes[code]
	if !ok {
		status = exitStore
	}
	return code, status
}

// checkFailed is returned by a command that did its job and found what the
// user asked it to fail on (diagnose --fail-on, an --expect assertion): exit
// status 1. It is not an error and carries no code; the command's output
// already shows what was found, and stderr gets the message as one line
// (none when the message is empty: the user asked for quiet).
type checkFailed struct{ msg string }

func (e *checkFailed) Error() string { return e.msg }

// failedCheck returns the "looked, and the answer is no" result.
func failedCheck(format string, args ...any) error {
	return &checkFailed{msg: fmt.Sprintf(format, args...)}
}

// exit reports err (if any) and returns the exit status. stderr gets exactly
// one line, dsh: <CODE>: <message>; a command printing JSON also gets the
// error as JSON on stdout, so a consumer reading stdout sees why it is short.
func (a *app) exit(err error) int {
	var cf *checkFailed
	if errors.As(err, &cf) {
		if cf.msg != "" {
			fmt.Fprintf(a.stderr, "dsh: %s\n", render.Escape(cf.msg))
		}
		return exitFound
	}
	code, status := classify(err, a.started)
	if err == nil {
		return status
	}
	msg := err.Error()
	switch {
	case code == dsherr.Cancelled && a.interrupted != nil && dsherr.CodeOf(err) == "":
		msg = a.interrupted.Error()
	case code == dsherr.Cancelled && a.interrupted != nil:
		msg += " (" + a.interrupted.Error() + ")"
	case errors.Is(err, context.Canceled) && dsherr.CodeOf(err) == "":
		msg = "interrupted: " + msg
	}
	fmt.Fprintf(a.stderr, "dsh: %s: %s\n", code, render.Escape(strings.TrimSpace(msg)))
	if a.output == render.JSON {
		doc := report.NewError(code, msg)
		// stdout may be what failed; stderr already has the report.
		_ = render.New(a.stdout, render.Options{Format: render.JSON}).JSON(doc)
	}
	return status
}

// exitLine is one line of a command's EXIT STATUS help.
type exitLine struct {
	status int
	text   string
}

// commonExitLines are the statuses every command can end with.
var commonExitLines = []exitLine{
	{exitOK, "success"},
	{exitUsage, "bad usage or invalid input (unknown flag, malformed or unknown id); nothing written"},
	{exitStore, "the database could not be read or written (missing for a read command, permissions, corruption)"},
	{exitCancelled, "interrupted (SIGINT or SIGTERM)"},
}

// rootExitLines are the statuses some command ends with, for dsh --help.
var rootExitLines = []exitLine{
	{exitFound, "a check found what it was asked to fail on (diagnose --fail-on, list --expect, import of an unreadable session)"},
	{exitConflict, "another live process holds the child (NOT_DELIVERED, STALE_WRITER); nothing written"},
}

// exitStatusHelp is the EXIT STATUS section of a command's help: the
// statuses every command shares and the command's own, in status order.
// Each status is numbered once; a command's own line for a shared status
// continues it.
func exitStatusHelp(specific ...exitLine) string {
	lines := slices.Concat(commonExitLines, specific)
	slices.SortStableFunc(lines, func(x, y exitLine) int { return x.status - y.status })
	var b strings.Builder
	b.WriteString("EXIT STATUS\n")
	for i, l := range lines {
		if i > 0 && lines[i-1].status == l.status {
			fmt.Fprintf(&b, "       %s\n", l.text)
			continue
		}
		fmt.Fprintf(&b, "  %-3d  %s\n", l.status, l.text)
	}
	b.WriteString("Errors print one line to stderr: dsh: <CODE>: <message>.")
	return b.String()
}
