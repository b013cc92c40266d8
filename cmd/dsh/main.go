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
func interruptContext(parent context.Context, stderr io.Writer, exit func(int)) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(parent)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case <-sigs:
			cancel()
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
		cancel()
	}
}

func sigName(sig os.Signal) string {
	if sig == syscall.SIGTERM {
		return "SIGTERM"
	}
	return "SIGINT"
}
