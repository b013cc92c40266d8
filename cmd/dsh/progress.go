package main

import (
	"time"

	"github.com/schollz/progressbar/v3"
)

// progressMode decides whether a long-running command draws a progress bar
// on stderr: by default only when stderr is a terminal (data on stdout stays
// clean for pipes), --progress forces it, --quiet silences it.
type progressMode struct {
	force, quiet bool
}

// progress returns a callback that advances a bar of total steps labelled
// desc, and a function that finishes the bar. Both are no-ops when no bar
// should be drawn.
func (a *app) progress(mode progressMode, desc string, total int) (step func(done int), finish func()) {
	step, _, finish = a.progressClearing(mode, desc, total)
	return step, finish
}

// progressClearing is progress for a command that prints while the bar is
// drawn: clear erases the bar from its line, so whatever is printed next
// (on stdout, often the same terminal) starts on a clean line; the next step
// draws the bar again below it.
func (a *app) progressClearing(mode progressMode, desc string, total int) (step func(done int), clear, finish func()) {
	if mode.quiet || !(mode.force || isTerminal(a.stderr)) || total <= 0 {
		return func(int) {}, func() {}, func() {}
	}
	bar := progressbar.NewOptions(total,
		progressbar.OptionSetWriter(a.stderr),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionShowCount(),
		progressbar.OptionShowIts(),
		progressbar.OptionSetItsString("sessions"),
		progressbar.OptionThrottle(100*time.Millisecond), // at most ten redraws a second
		progressbar.OptionClearOnFinish(),
	)
	return func(done int) { _ = bar.Set(done) }, func() { _ = bar.Clear() }, func() { _ = bar.Finish() }
}
