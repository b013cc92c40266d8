package main

import (
	"io"
	"strings"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
)

// progressMode decides whether a long-running command draws a progress bar
// on stderr: by default only when stderr is a terminal (data on stdout stays
// clean for pipes), --progress forces it, --quiet silences it; --no-progress
// (or DSH_NO_PROGRESS=1) silences it for every command.
type progressMode struct {
	force, quiet bool
}

// progressOff reports whether no progress should be drawn in mode.
func (a *app) progressOff(mode progressMode) bool {
	off, _ := a.globalFlags.GetBool("no-progress")
	return mode.quiet || off || envTrue("DSH_NO_PROGRESS") || !(mode.force || isTerminal(a.stderr))
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
// draws the bar again below it. (Printing through a.stdout clears it too.)
func (a *app) progressClearing(mode progressMode, desc string, total int) (step func(done int), clear, finish func()) {
	if a.progressOff(mode) || total <= 0 {
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
	ind := a.out.show(func() { _ = bar.Clear() })
	return func(done int) { _ = bar.Set(done) }, func() { _ = bar.Clear() }, func() { a.out.hide(ind); _ = bar.Finish() }
}

// spinner draws an indeterminate indicator (a spinner and the time elapsed)
// for work whose size is not known up front, until stop is called.
func (a *app) spinner(mode progressMode, desc string) (stop func()) {
	if a.progressOff(mode) {
		return func() {}
	}
	bar := progressbar.NewOptions(-1,
		progressbar.OptionSetWriter(a.stderr),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionSpinnerType(14),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionClearOnFinish(),
	)
	_ = bar.RenderBlank()
	// A spinner redraws itself on a timer, so printing a result stops it
	// for good rather than erasing one frame.
	var once sync.Once
	finish := func() { once.Do(func() { _ = bar.Finish() }) }
	ind := a.out.show(finish)
	return func() { a.out.hide(ind); finish() }
}

// resultWriter is stdout while a progress indicator may be drawn on stderr:
// before anything is printed it erases the indicator, so results never share
// a line with it on a terminal where both streams appear. A bar's next step
// draws it again below what was printed.
type resultWriter struct {
	w   io.Writer
	mu  sync.Mutex
	ind *indicator
}

// indicator is one progress indicator being drawn; clear erases it.
type indicator struct{ clear func() }

func (r *resultWriter) Write(p []byte) (int, error) {
	r.mu.Lock()
	if r.ind != nil {
		r.ind.clear()
	}
	r.mu.Unlock()
	return r.w.Write(p)
}

// show makes ind the indicator to erase before output.
func (r *resultWriter) show(clear func()) *indicator {
	ind := &indicator{clear: clear}
	r.mu.Lock()
	r.ind = ind
	r.mu.Unlock()
	return ind
}

// hide forgets ind once it is finished.
func (r *resultWriter) hide(ind *indicator) {
	r.mu.Lock()
	if r.ind == ind {
		r.ind = nil
	}
	r.mu.Unlock()
}

// migrationProgress draws a bar for each migration back-fill (told 0 of
// total first, total at the end) in the mode a.migration.
func (a *app) migrationProgress() func(name string, done, total int) {
	var step func(int)
	var finish func()
	return func(name string, done, total int) {
		if done == 0 {
			step, finish = a.progress(a.migration, "migrating the database ("+strings.ReplaceAll(name, "_", " ")+")", total)
		}
		if step == nil {
			return
		}
		step(done)
		if done == total {
			finish()
			step = nil
		}
	}
}
