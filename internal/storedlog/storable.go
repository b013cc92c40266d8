package storedlog

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/session"
)

// Every text a store keeps in a text column must be valid UTF-8 without
// U+0000: PostgreSQL's text type cannot hold either, and SQLite could, so
// both stores refuse such a write alike (code INVALID_INPUT, nothing
// written) instead of one keeping what the other aborts on. JSON text
// (event data, surfaceOp) holds a NUL only escaped, which is kept.

// unstorable says why text cannot be kept, "" when it can.
func unstorable(text string) string {
	switch {
	case strings.IndexByte(text, 0) >= 0:
		return "U+0000 (NUL)"
	case !utf8.ValidString(text):
		return "bytes that are not UTF-8"
	}
	return ""
}

// UnstorableID reports whether no store can hold a session with this id.
func UnstorableID(id string) bool { return unstorable(id) != "" }

// CheckStorable refuses a session (h, with events to write) holding text no
// store can keep: in the header's strings, an event's type, its data or
// surfaceOp JSON text, or an unknown envelope key's name.
func CheckStorable(h session.Header, events []session.Event) error {
	refuse := func(field, why string) error {
		return dsherr.New(dsherr.InvalidInput, "session %q: %s holds %s, which a dsh store cannot keep; not stored", h.ID, field, why)
	}
	if why := unstorable(h.ID); why != "" {
		return refuse("the id", why)
	}
	for _, f := range []struct {
		name  string
		value *string
	}{{"cwd", h.Cwd}, {"parentSession", h.ParentSession}, {"origin", h.Origin}, {"agentPreset", h.AgentPreset}} {
		if f.value == nil {
			continue
		}
		if why := unstorable(*f.value); why != "" {
			return refuse("the header's "+f.name, why)
		}
	}
	for _, e := range events {
		at := func(what string) string {
			return "the " + what + " of the event at seq " + strconv.FormatInt(e.Seq, 10)
		}
		if why := unstorable(e.Type); why != "" {
			return refuse(at("type"), why)
		}
		if why := unstorable(string(e.Data)); why != "" {
			return refuse(at("data"), why)
		}
		if why := unstorable(string(e.SurfaceOp)); why != "" {
			return refuse(at("surfaceOp"), why)
		}
		for _, k := range e.UnknownKeys {
			if why := unstorable(k); why != "" {
				return refuse(at("envelope key name"), why)
			}
		}
	}
	return nil
}

// StorableReason is a reason dsh writes about a log (a torn tail's, a
// damaged log's) as a text column can keep it: a NUL or bytes that are not
// UTF-8 quoted from the data become U+FFFD. It is dsh's message, not data:
// the data itself is kept as bytes beside it.
func StorableReason(reason string) string {
	if unstorable(reason) == "" {
		return reason
	}
	return strings.ReplaceAll(strings.ToValidUTF8(reason, "\uFFFD"), "\x00", "\uFFFD")
}

// StorableRefusal is r as a store keeps it: an id no store can hold is
// recorded as none (the reason names it), and the reason is StorableReason's.
func StorableRefusal(r backend.Refusal) backend.Refusal {
	if UnstorableID(r.ID) {
		r.ID, r.Header = "", nil
	}
	r.Location = StorableReason(r.Location)
	r.Reason = StorableReason(r.Reason)
	return r
}
