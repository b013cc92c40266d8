package subagent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// Limits of the exec provider.
const (
	// maxReplyBytes bounds a reply: the whole stdout becomes one event.
	maxReplyBytes = 8 << 20
	// stderrTailBytes is how much of the end of stderr a failure quotes.
	stderrTailBytes = 1 << 10
	// execWaitDelay is how long the provider waits, after the shell
	// exits or is killed, for processes it started in the background to
	// close stdout before it stops reading.
	execWaitDelay = 250 * time.Millisecond
)

// execProvider runs a shell command per turn: /bin/sh -c COMMAND with the
// message on stdin. Its stdout, without trailing newlines (as shell command
// substitution strips them), is the reply. The command runs in its own
// process group, and the whole group is killed when the turn is cancelled
// or times out, and when the shell exits (so nothing it started in the
// background outlives the turn). On Linux the group is also killed when dsh
// itself dies, even by SIGKILL (see shellArgs).
type execProvider struct {
	command string
}

func (p *execProvider) Run(ctx context.Context, message string) (string, error) {
	argv := shellArgs(p.command)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdin = strings.NewReader(message)
	stdout := &cappedBuffer{limit: maxReplyBytes}
	stderr := &tailBuffer{limit: stderrTailBytes}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	isolateProcessGroup(cmd)
	cmd.Cancel = func() error { return killProcessGroup(cmd) }
	cmd.WaitDelay = execWaitDelay
	err := cmd.Run()
	if cmd.Process != nil {
		// Reap whatever the command left running in its group. The group
		// id cannot have been reused while members remain.
		killProcessGroup(cmd)
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return "", ctxErr
	}
	switch {
	case stdout.overflow:
		return "", &TurnFailure{Message: fmt.Sprintf("exec provider: the command wrote more than %d bytes to stdout", maxReplyBytes), Code: FailureExec}
	case err == nil, errors.Is(err, exec.ErrWaitDelay):
		// ErrWaitDelay: the shell succeeded but something it started kept
		// stdout open; the reply is what arrived until then.
	default:
		var exitErr *exec.ExitError
		what := "could not run the command"
		if errors.As(err, &exitErr) {
			if code := exitErr.ExitCode(); code >= 0 {
				what = fmt.Sprintf("command exited with status %d", code)
			} else {
				what = "command ended: " + exitErr.String()
			}
		} else {
			what += ": " + err.Error()
		}
		if tail := stderr.lastLine(); tail != "" {
			what += ": " + tail
		}
		return "", &TurnFailure{Message: "exec provider: " + what, Code: FailureExec}
	}
	reply := strings.TrimRight(stdout.buf.String(), "\n")
	return strings.ToValidUTF8(reply, "\uFFFD"), nil
}

// cappedBuffer collects up to limit bytes and then refuses more, which stops
// the command's output pipe (the command gets SIGPIPE). The buffer is not
// embedded: its ReadFrom would let io.Copy bypass Write and the limit.
type cappedBuffer struct {
	buf      bytes.Buffer
	limit    int
	overflow bool
}

var errReplyTooLong = errors.New("reply too long")

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if b.buf.Len()+len(p) > b.limit {
		b.overflow = true
		return 0, errReplyTooLong
	}
	return b.buf.Write(p)
}

// tailBuffer keeps the last limit bytes written to it.
type tailBuffer struct {
	buf   []byte
	limit int
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	n := len(p)
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.limit; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return n, nil
}

// lastLine is the last non-blank line of what was kept, valid UTF-8.
func (b *tailBuffer) lastLine() string {
	text := strings.TrimSpace(strings.ToValidUTF8(string(b.buf), "\uFFFD"))
	if i := strings.LastIndexByte(text, '\n'); i >= 0 {
		text = strings.TrimSpace(text[i+1:])
	}
	return text
}
