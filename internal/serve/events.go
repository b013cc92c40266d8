package serve

import (
	"bytes"
	"net/http"
	"time"

	"github.com/dsh-project/dsh/internal/dsherr"
)

// heartbeat is how often an idle stream sends a comment, so that a client
// that went away is noticed and proxies keep the connection.
const heartbeat = 15 * time.Second

// apiEvents is the event stream of one page's live fragment:
// ?view=tree&id=P&… (a session page's tree, with the page's scope, filters
// and cursor) or ?view=roots&… (the root sessions table). Each event is
// `event: fragment` with the fragment's HTML as its data, sent when it
// changes; the page's script swaps it in.
func (s *Server) apiEvents(w http.ResponseWriter, r *http.Request) {
	key, render, err := s.pages.topic(s, r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	st, ok := s.hub.subscribe(key, render)
	if !ok {
		s.fail(w, r, dsherr.New(dsherr.StoreUnavailable, "too many event streams open (%d)", maxStreams))
		return
	}
	defer s.hub.unsubscribe(key, st)
	rc := http.NewResponseController(w)
	// The stream outlives the server's write timeout by design: the
	// deadline is lifted here and renewed per event. (net/http lifts the
	// read deadline itself once the request is read.)
	if err := rc.SetWriteDeadline(time.Time{}); err != nil {
		s.fail(w, r, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if err := rc.Flush(); err != nil {
		return
	}
	tick := time.NewTicker(heartbeat)
	defer tick.Stop()
	for {
		var msg []byte
		select {
		case <-r.Context().Done():
			return
		case <-s.hub.done:
			return
		case <-tick.C:
			msg = []byte(": ping\n\n")
		case b := <-st.ch:
			msg = sseEvent("fragment", b)
		}
		// A client that stops reading must not hold the handler for ever.
		_ = rc.SetWriteDeadline(time.Now().Add(30 * time.Second))
		if _, err := w.Write(msg); err != nil {
			return
		}
		if err := rc.Flush(); err != nil {
			return
		}
	}
}

// sseEvent frames an HTML fragment as one event: every line its own data:
// field. A carriage return would end a line too, so it is sent as the
// character reference HTML reads the same.
func sseEvent(name string, data []byte) []byte {
	var b bytes.Buffer
	b.WriteString("event: " + name + "\n")
	data = bytes.ReplaceAll(data, []byte("\r"), []byte("&#13;"))
	for _, line := range bytes.Split(data, []byte("\n")) {
		b.WriteString("data: ")
		b.Write(line)
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	return b.Bytes()
}
