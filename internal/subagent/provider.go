package subagent

import (
	"context"
	"fmt"
	"time"

	"github.com/dsh-project/dsh/internal/dsherr"
)

// Offline turn providers. DSH runs a child's turn through a model; dsh, being
// offline, runs it through one of these. The provider name is recorded as
// the model route (the descriptor's agentProvider and the assistant
// message's source.provider), so a log says what produced each reply.
const (
	// ProviderEcho answers deterministically: "echo: " followed by the
	// message. It is the default.
	ProviderEcho = "echo"
	// ProviderExec runs a shell command with the message on stdin; its
	// stdout is the reply.
	ProviderExec = "exec"
)

// Provider runs the model part of one offline turn: it answers one user
// message. A *TurnFailure ends the turn with reason kind "error"; so does any
// other error (code UNKNOWN). When ctx is done the provider must stop and
// return promptly, leaving nothing running.
type Provider interface {
	Run(ctx context.Context, message string) (reply string, err error)
}

// TurnFailure is a provider failure as DSH records it in a turn/end reason:
// {kind:"error", error:{message, code}}.
type TurnFailure struct {
	Message string
	Code    string
}

func (e *TurnFailure) Error() string { return e.Message }

// Failure codes dsh writes in a turn/end error reason. UNKNOWN is DSH's own
// code for an unclassified failure.
const (
	FailureExec    = "EXEC_FAILED" // the exec command failed, exited non-zero or was killed
	FailureTimeout = "TIMEOUT"     // the turn ran past its --timeout
	FailureUnknown = "UNKNOWN"
)

// ProviderConfig selects a provider and its route.
type ProviderConfig struct {
	// Name is ProviderEcho or ProviderExec; "" lets the caller's default
	// apply (echo for a start, the descriptor's route for a resume).
	Name string
	// Command is the exec provider's shell command; it is an error with any
	// other provider.
	Command string
	// Model is recorded as the model of the route; "" means the provider's
	// name.
	Model string
	// Timeout bounds the provider's run; zero means no limit. A turn that
	// runs past it ends with a TIMEOUT error reason.
	Timeout time.Duration
}

// route is the provider and model a turn is recorded with.
type route struct {
	provider string
	model    string
}

// open checks the configuration and returns the provider with its route.
func (c ProviderConfig) open() (Provider, route, error) {
	if c.Timeout < 0 {
		return nil, route{}, dsherr.New(dsherr.InvalidInput, "provider timeout must not be negative (got %s)", c.Timeout)
	}
	r := route{provider: c.Name, model: c.Model}
	if r.model == "" {
		r.model = r.provider
	}
	switch c.Name {
	case ProviderEcho:
		if c.Command != "" {
			return nil, route{}, dsherr.New(dsherr.Usage, "a command (--exec) needs the exec provider, not %q", c.Name)
		}
		return echoProvider{}, r, nil
	case ProviderExec:
		if c.Command == "" {
			return nil, route{}, dsherr.New(dsherr.Usage, "the exec provider needs a command (--exec CMD)")
		}
		return &execProvider{command: c.Command}, r, nil
	}
	return nil, route{}, dsherr.New(dsherr.Usage, "unknown provider %q (want %s or %s)", c.Name, ProviderEcho, ProviderExec)
}

// echoProvider is the deterministic default provider.
type echoProvider struct{}

func (echoProvider) Run(ctx context.Context, message string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	return EchoReply(message), nil
}

// EchoReply is the echo provider's reply to message.
func EchoReply(message string) string { return fmt.Sprintf("echo: %s", message) }
