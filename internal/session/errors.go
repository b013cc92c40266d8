package session

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/dsh-project/dsh/internal/dsherr"
)

// ErrFormatUnsupported is the class of DSH's SessionFormatUnsupportedError:
// the log is intact but written in a format this harness does not read (a
// header version other than 0, or an event type outside the known list that
// is not marked ignorable). Test with errors.Is.
var ErrFormatUnsupported = &dsherr.Error{
	Code: dsherr.UnsupportedFormat,
	Msg:  "session log format is not supported by this harness",
}

// ErrInvalidLog is the class of every other validation failure (DSH's
// SessionPersistenceCorruptionError). Test with errors.Is.
var ErrInvalidLog = &dsherr.Error{
	Code: dsherr.InvalidLog,
	Msg:  "session log failed validation",
}

// CheckID accepts every id DSH accepts, any non-empty string (DSH wrote
// and listed a session named " zeta"), and refuses only what cannot be
// stored and passed on intact: bytes that are not UTF-8 (DSH's ids are
// Unicode text, and JSON cannot carry such bytes) and NUL (SQLite's text
// functions and C strings end there). Blanks and control characters are
// kept; every human output escapes them. The CLI and dsh serve both check
// ids here.
func CheckID(id string) error {
	switch {
	case id == "":
		return dsherr.New(dsherr.InvalidInput, "empty session id")
	case !utf8.ValidString(id):
		return dsherr.New(dsherr.InvalidInput, "session id %q is not valid UTF-8 (DSH ids are Unicode text)", id)
	case strings.ContainsRune(id, 0):
		return dsherr.New(dsherr.InvalidInput, "session id %q contains NUL, which the store cannot keep intact", id)
	}
	return nil
}

// Rule ids name the check a ValidationError comes from. They are stable:
// scripts and tests match on them.
const (
	RuleFormatVersion = "format-version" // format refusal
	RuleUnknownType   = "unknown-type"   // format refusal

	RuleHeaderShape           = "header-shape"
	RuleHeaderRetiredFields   = "header-retired-fields"
	RuleHeaderID              = "header-id"
	RuleHeaderCreatedAt       = "header-created-at"
	RuleHeaderCwd             = "header-cwd"
	RuleHeaderParentSession   = "header-parent-session"
	RuleHeaderSeedLength      = "header-seed-length"
	RuleHeaderOrigin          = "header-origin"
	RuleHeaderDelegationDepth = "header-delegation-depth"

	RuleEnvelopeKeys = "envelope-keys"
	RuleEnvelopeSeq  = "envelope-seq"
	RuleEnvelopeTime = "envelope-time"
	RuleEnvelopeData = "envelope-data"

	RuleLegacyVocabulary = "legacy-vocabulary"
	RuleLegacyShape      = "legacy-shape"

	RuleUserMessageShape      = "user-message-shape"
	RuleAssistantMessageShape = "assistant-message-shape"
	RuleToolResultShape       = "tool-result-shape"
	RuleRequestHeaderShape    = "request-header-shape"
	RuleSystemMessageShape    = "system-message-shape"

	// RuleLineageMarker: a later-format log whose tagged session/end-seed
	// markers disagree with its header's isSeeded (and cut).
	RuleLineageMarker = "lineage-marker"

	RuleSeqContiguous = "seq-contiguous"

	RuleSurfaceOpForbidden     = "surface-op-forbidden"
	RuleSourceSeqsForbidden    = "source-seqs-forbidden"
	RuleSurfaceOpRequired      = "surface-op-required"
	RuleSurfaceOpInvalid       = "surface-op-invalid"
	RuleSourceSeqsEmpty        = "source-seqs-empty"
	RuleSourceSeqsRange        = "source-seqs-range"
	RuleSourceSeqsDuplicate    = "source-seqs-duplicate"
	RuleSourceSeqsNotEarlier   = "source-seqs-not-earlier"
	RuleReplaceRange           = "replace-range"
	RuleReplaceCoverage        = "replace-coverage"
	RuleToolResultReplaceCount = "tool-result-replace-count"
	RuleToolResultReplaceKind  = "tool-result-replace-target"
	RuleToolResultReplaceDiff  = "tool-result-replace-content"
)

// ValidationError is one failed DSH validation rule.
type ValidationError struct {
	// Seq is the log position of the offending event (the seq it should
	// carry), or -1 when the header is at fault.
	Seq int64
	// Rule is a stable short id (the Rule… constants).
	Rule string
	// Msg is DSH's message for the failure where DSH pins one, otherwise a
	// message in the same style naming the problem.
	Msg string
}

func (e *ValidationError) Error() string { return e.Msg }

// Unwrap places the failure in its DSH error class, so errors.Is against
// ErrFormatUnsupported / ErrInvalidLog and dsherr.CodeOf both work.
func (e *ValidationError) Unwrap() error {
	if e.IsFormatRefusal() {
		return ErrFormatUnsupported
	}
	return ErrInvalidLog
}

// IsFormatRefusal reports whether DSH refuses the log as written by a newer
// (or older) harness rather than rejecting it as corrupt.
func (e *ValidationError) IsFormatRefusal() bool {
	return e.Rule == RuleFormatVersion || e.Rule == RuleUnknownType
}

func failf(seq int64, rule, format string, args ...any) *ValidationError {
	return &ValidationError{Seq: seq, Rule: rule, Msg: fmt.Sprintf(format, args...)}
}

func headerFail(rule, msg string) *ValidationError {
	return &ValidationError{Seq: -1, Rule: rule, Msg: msg}
}
