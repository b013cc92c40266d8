// Command dsh is an offline CLI over DeepSeek Harness session corpora. All
// behaviour lives in Main so that tests run commands in-process.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := interruptContext(context.Background(), os.Stderr, os.Exit)
	code := Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// interruptContext returns a context cancelled by the first SIGINT or
// SIGTERM, so the command stops cleanly (exit 130, nothing half-written). A
// second signal means the user will not wait for that: dsh exits at once,
// which is safe because every write is one SQLite transaction, as it is for
// a process killed outright. stop releases the signals.
//
// The context's cause (context.Cause) is an *interruption naming the
// signal, so that the CANCELLED message says which one stopped dsh.
func interruptContext(parent context.Context, stderr io.Writer, exit func(int)) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(parent)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case sig := <-sigs:
			cancel(&interruption{sig: sig})
		case <-done:
			return
		}
		select {
		case sig := <-sigs:
			fmt.Fprintf(stderr, "dsh: CANCELLED: second %s, exiting at once\n", sigName(sig))
			exit(exitCancelled)
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel(nil)
	}
}

// interruption is the cause of a context cancelled by a signal.
type interruption struct{ sig os.Signal }

func (e *interruption) Error() string { return "interrupted by " + sigName(e.sig) }

// Is makes an interruption a context.Canceled, as the context's own error is.
func (e *interruption) Is(target error) bool { return target == context.Canceled }

func sigName(sig os.Signal) string {
	if sig == syscall.SIGTERM {
		return "SIGTERM"
	}
	return "SIGINT"
}
