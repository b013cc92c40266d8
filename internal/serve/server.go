// Package serve is dsh's HTTP server: a read-only JSON API whose objects
// are the CLI's -o json objects (built by internal/report and
// internal/render, the code the CLI prints with), a server-rendered page
// set, and live updates over Server-Sent Events driven by one change
// watcher per server. It never writes: it reads a corpus its caller opened
// read-only.
package serve

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/dshcompat"
	"github.com/dsh-project/dsh/internal/location"
	"github.com/dsh-project/dsh/internal/subagent"
)

// DefaultListen is where dsh serve listens unless told otherwise: the
// loopback interface only.
const DefaultListen = "127.0.0.1:7420"

// Corpus is the corpus a server reads, opened read-only by its caller the
// way every read command opens it.
type Corpus struct {
	Reader location.Reader
	// Lister builds a listing over the corpus (with its checkpoint cache);
	// the server sets its profile.
	Lister func() *subagent.Lister
	// View runs fn on one consistent snapshot of the corpus.
	View func(ctx context.Context, fn func(location.Reader) error) error
	// LookupError names an unknown id (and where it was looked for) as
	// the CLI does; other errors pass through.
	LookupError func(id string, err error) error
}

// Config is how a server behaves.
type Config struct {
	// Token, when set, is required on every request: Authorization:
	// Bearer, the session cookie, or ?token= once (which sets the cookie).
	Token string
	// Profile is whose listing and audit rules apply (--dsh-compat).
	Profile dshcompat.Profile
	// Where names the corpus in the pages' header.
	Where string
	// Warn receives what does not stop the server: the change signal lost
	// (the pages then stop updating). Nil drops it.
	Warn func(string)
}

// Server serves one corpus.
type Server struct {
	corpus Corpus
	cfg    Config
	hub    *hub
	mux    *http.ServeMux
	pages  *pages
	// timeouts are the server's read and write timeouts (tests shorten
	// them).
	timeouts struct{ read, write time.Duration }
	// pageHits is the most hits the search page draws (tests lower it).
	pageHits int
}

// New builds a server over c. Call Run (or use Handler and Close).
func New(c Corpus, cfg Config) (*Server, error) {
	s := &Server{corpus: c, cfg: cfg, mux: http.NewServeMux()}
	s.timeouts.read, s.timeouts.write = 30*time.Second, 2*time.Minute
	s.pageHits = maxPageRows
	p, err := newPages()
	if err != nil {
		return nil, err
	}
	s.pages = p
	notifier, _ := c.Reader.(backend.ChangeNotifier)
	s.hub = newHub(notifier)
	s.hub.leases = s.readLeases
	s.hub.warn = cfg.Warn
	s.routes()
	return s, nil
}

// NeedsToken reports whether an address is reachable from other machines,
// where a server must not run without a token: anything but a loopback IP
// or "localhost" (an empty host, 0.0.0.0 and :: are every interface).
func NeedsToken(listen string) (bool, error) {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return false, fmt.Errorf("--listen %s: %w", listen, err)
	}
	if strings.EqualFold(host, "localhost") {
		return false, nil
	}
	ip := net.ParseIP(host)
	return ip == nil || !ip.IsLoopback(), nil
}

// Handler is the server's whole HTTP surface, security headers and the
// token check included.
func (s *Server) Handler() http.Handler { return s.secure(s.mux) }

// Close stops the change watcher and ends every event stream.
func (s *Server) Close() { s.hub.close() }

// Run serves on ln until ctx ends, then shuts down gracefully: event
// streams are ended, in-flight requests get a few seconds to finish.
func (s *Server) Run(ctx context.Context, ln net.Listener) error {
	hubCtx, stopHub := context.WithCancel(ctx)
	defer stopHub()
	go s.hub.run(hubCtx)
	srv := &http.Server{
		Handler: s.Handler(),
		// A page or an API answer is read from the store in one go; the
		// event stream lifts its own deadlines.
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       s.timeouts.read,
		WriteTimeout:      s.timeouts.write,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		s.hub.close()
		return err
	case <-ctx.Done():
	}
	s.hub.close()
	shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	err := srv.Shutdown(shutdown)
	if serr := <-errc; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}

// cookieName holds the token in a browser once ?token= has been given.
const cookieName = "dsh_token"

// secure sets the headers every answer carries and checks the token. With
// no token the server answers only requests addressed to a loopback name,
// so a web page elsewhere cannot reach it by DNS rebinding.
func (s *Server) secure(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			h.Set("Allow", "GET, HEAD")
			s.fail(w, r, errMethod)
			return
		}
		if s.cfg.Token == "" {
			if !loopbackHost(r.Host) {
				s.fail(w, r, errHost)
				return
			}
			next.ServeHTTP(w, r)
			return
		}
		if q := r.URL.Query(); q.Has("token") {
			if !s.tokenOK(q.Get("token")) {
				s.fail(w, r, errToken)
				return
			}
			// The token leaves the address bar (and history) at once.
			http.SetCookie(w, &http.Cookie{Name: cookieName, Value: s.cfg.Token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
			q.Del("token")
			u := r.URL.EscapedPath()
			if len(q) > 0 {
				u += "?" + q.Encode()
			}
			http.Redirect(w, r, u, http.StatusSeeOther)
			return
		}
		if !s.tokenOK(requestToken(r)) {
			s.fail(w, r, errToken)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// requestToken is the bearer token of r, else its cookie's.
func requestToken(r *http.Request) string {
	if auth, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		return auth
	}
	if c, err := r.Cookie(cookieName); err == nil {
		return c.Value
	}
	return ""
}

func (s *Server) tokenOK(got string) bool {
	return subtle.ConstantTimeCompare([]byte(got), []byte(s.cfg.Token)) == 1
}

// loopbackHost reports whether a Host header names this machine's
// loopback interface.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
