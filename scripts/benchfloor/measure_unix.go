//go:build unix

package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// measure implements benchfloor measure: it exits with CMD's exit status.
func measure(args []string) int {
	if len(args) < 3 || args[1] != "--" {
		fmt.Fprintln(os.Stderr, "usage: benchfloor measure OUT -- CMD [ARGS...]")
		return 2
	}
	out, err := os.Create(args[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchfloor:", err)
		return 2
	}
	defer out.Close()
	c := exec.Command(args[2], args[3:]...)
	c.Stdout, c.Stderr = out, os.Stderr
	start := time.Now()
	err = c.Run()
	wall := time.Since(start)
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		fmt.Fprintln(os.Stderr, "benchfloor:", err)
		return 2
	}
	ru, _ := c.ProcessState.SysUsage().(*syscall.Rusage)
	var cpu time.Duration
	var rss int64
	if ru != nil {
		cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		rss = int64(ru.Maxrss)
	}
	fmt.Printf("%d %d %d\n", wall.Microseconds(), cpu.Microseconds(), rss)
	return c.ProcessState.ExitCode()
}
