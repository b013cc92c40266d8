package dshformat

import "errors"

// ReadFailure is the INVALID_LOG error an audit of session id in place
// reports for a log whose read failed with err (Corpus.Audit's ReadErr),
// naming the seq when the reader knows it (a *backend.CorruptRowError); nil
// for a format refusal (*UnsupportedVersionError, UNSUPPORTED_FORMAT). An
// import that refuses the session records the same, so that diagnose of the
// database says what diagnose in place says.
func ReadFailure(id string, err error) error {
	var refusal *UnsupportedVersionError
	if errors.As(err, &refusal) {
		return nil
	}
	return corruptLog(id, err)
}
