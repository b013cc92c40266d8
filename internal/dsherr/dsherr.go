// Package dsherr defines dsh's coded errors: errors that callers (scripts, CI
// jobs, the CLI's exit-code mapping) branch on carry a stable Code.
package dsherr

import (
	"errors"
	"fmt"
)

// Code is a stable, documented error code. Never rename one. Each
// constant is named after its wire code (STORE_UNAVAILABLE is
// StoreUnavailable), so either finds the other with grep.
type Code string

// The codes dsh emits. DSH's own codes keep DSH's spelling.
const (
	Cancelled           Code = "CANCELLED"
	NotResumable        Code = "NOT_RESUMABLE"
	Unauthorized        Code = "UNAUTHORIZED"
	DuplicateChild      Code = "DUPLICATE_CHILD" // start: a subagent child with that id exists
	AlreadyExists       Code = "ALREADY_EXISTS"  // a session (not a start's child) or a file to be created exists
	DepthExceeded       Code = "DEPTH_EXCEEDED"
	DescriptorMalformed Code = "DESCRIPTOR_MALFORMED"
	NotDelivered        Code = "NOT_DELIVERED" // another live process holds the child (lease conflict)
	StaleWriter         Code = "STALE_WRITER"
	InvalidLog          Code = "INVALID_LOG" // a batch or stored log fails DSH's validation
	NotFound            Code = "NOT_FOUND"   // unknown session id
	Usage               Code = "USAGE"       // bad flags or arguments
	InvalidInput        Code = "INVALID_INPUT"
	StoreUnavailable    Code = "STORE_UNAVAILABLE" // the store or a source could not be read or written
	UnsupportedFormat   Code = "UNSUPPORTED_FORMAT"
	Internal            Code = "INTERNAL"
)

// Error is an error with a stable code. Msg is the human message; Err, when
// set, is the underlying cause (reachable through errors.Is/As).
type Error struct {
	Code Code
	Msg  string
	Err  error
}

func (e *Error) Error() string {
	if e.Msg == "" && e.Err != nil {
		return e.Err.Error()
	}
	return e.Msg
}

func (e *Error) Unwrap() error { return e.Err }

// New returns a coded error with a formatted message.
func New(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// Wrap returns a coded error whose message is msg followed by the cause.
func Wrap(code Code, err error, format string, args ...any) *Error {
	msg := fmt.Sprintf(format, args...)
	if err != nil {
		msg += ": " + err.Error()
	}
	return &Error{Code: code, Msg: msg, Err: err}
}

// CodeOf returns the code of the outermost coded error in err's chain, or ""
// when there is none.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}
