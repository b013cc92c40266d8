// Package report builds the values dsh's read commands answer with — a
// session's header and log summary (session show), a parent's listing with
// its --state/--mode filter (list), the build's version (version), a coded
// error — so that the CLI's -o json and dsh serve's JSON API are one thing
// built by one piece of code. How a value looks is render's business.
package report

import (
	"context"
	"errors"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/session"
)

// Header is a session header as dsh prints it in JSON: DSH's field names
// and order, optional fields omitted when absent (a present zero, such as
// seedLength 0, is printed).
type Header struct {
	Version         int64   `json:"version"`
	ID              string  `json:"id"`
	CreatedAt       int64   `json:"createdAt"`
	Cwd             *string `json:"cwd,omitempty"`
	ParentSession   *string `json:"parentSession,omitempty"`
	SeedLength      *int64  `json:"seedLength,omitempty"`
	Origin          *string `json:"origin,omitempty"`
	DelegationDepth *int64  `json:"delegationDepth,omitempty"`
	AgentPreset     *string `json:"agentPreset,omitempty"`
}

// NewHeader is h as dsh prints it.
func NewHeader(h session.Header) Header {
	return Header{
		Version:         h.Version,
		ID:              h.ID,
		CreatedAt:       h.CreatedAt,
		Cwd:             h.Cwd,
		ParentSession:   h.ParentSession,
		SeedLength:      h.SeedLength,
		Origin:          h.Origin,
		DelegationDepth: h.DelegationDepth,
		AgentPreset:     h.AgentPreset,
	}
}

// ErrorDoc is a failure as dsh prints it in JSON: {"error":{"code","message"}}.
type ErrorDoc struct {
	Error ErrorBody `json:"error"`
}

// ErrorBody is the code (one of dsherr's stable codes) and the message.
type ErrorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// NewError is the document for one failure.
func NewError(code dsherr.Code, msg string) ErrorDoc {
	return ErrorDoc{Error: ErrorBody{Code: string(code), Message: msg}}
}

// ErrorCode is the stable code err is reported with: cancellation first
// (whatever the interrupted layer wrapped it in), then the outermost coded
// error, then what the backend's sentinels and DSH's validation mean;
// INTERNAL for anything else.
func ErrorCode(err error) dsherr.Code {
	if errors.Is(err, context.Canceled) {
		return dsherr.Cancelled
	}
	if errors.Is(err, backend.ErrNoDatabase) {
		return dsherr.StoreUnavailable
	}
	if code := dsherr.CodeOf(err); code != "" {
		return code
	}
	var ve *session.ValidationError
	switch {
	case errors.Is(err, backend.ErrNotFound):
		return dsherr.NotFound
	case errors.Is(err, backend.ErrDuplicate):
		return dsherr.AlreadyExists
	case errors.As(err, &ve):
		return dsherr.InvalidLog
	case errors.Is(err, backend.ErrCorrupt):
		return dsherr.StoreUnavailable
	}
	return dsherr.Internal
}
