package serve

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-project/dsh/internal/dshcompat"
	"github.com/dsh-project/dsh/internal/location"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/sqlitepersist"
	"github.com/dsh-project/dsh/internal/subagent"
)

// accessServer is a server over a one-session SQLite store, read-only.
func accessServer(t *testing.T, token string) http.Handler {
	t.Helper()
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "dsh.db")
	w, err := sqlitepersist.Open(ctx, db, sqlitepersist.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.CreateSession(ctx, session.Header{ID: "parent", CreatedAt: 1}, nil); err != nil {
		t.Fatal(err)
	}
	w.Close()
	st, err := sqlitepersist.OpenReadOnly(ctx, db, sqlitepersist.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	s, err := New(Corpus{
		Reader:      st,
		Lister:      func() *subagent.Lister { return subagent.NewStoreLister(st, st, 1) },
		View:        func(ctx context.Context, fn func(location.Reader) error) error { return fn(st) },
		LookupError: func(_ string, err error) error { return err },
	}, Config{Token: token, Profile: dshcompat.Default})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s.Handler()
}

func serveOne(h http.Handler, method, target string, header ...string) *http.Response {
	req := httptest.NewRequest(method, target, nil)
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] == "Host" {
			req.Host = header[i+1]
		} else {
			req.Header.Add(header[i], header[i+1])
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

// checkSecurityHeaders: every answer, refusals included, forbids scripts,
// styles and frames from anywhere but the server, sniffing, referrers and
// caching.
func checkSecurityHeaders(t *testing.T, what string, resp *http.Response) {
	t.Helper()
	csp := resp.Header.Get("Content-Security-Policy")
	for _, d := range []string{"default-src 'none'", "script-src 'self'", "style-src 'self'", "base-uri 'none'", "frame-ancestors 'none'", "form-action 'self'"} {
		if !strings.Contains(csp, d) {
			t.Errorf("%s: CSP %q lacks %s", what, csp, d)
		}
	}
	if strings.Contains(csp, "unsafe-") || strings.Contains(csp, "*") {
		t.Errorf("%s: CSP %q allows more than the server", what, csp)
	}
	for k, v := range map[string]string{"X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer", "Cache-Control": "no-store"} {
		if got := resp.Header.Get(k); got != v {
			t.Errorf("%s: %s = %q, want %q", what, k, got, v)
		}
	}
}

// With a token, only the whole token opens the server, however it is
// given: a prefix of it, an extension of it, an empty one or one without
// the Bearer scheme is refused.
func TestTokenIsTheWholeToken(t *testing.T) {
	const token = "s3cret-token"
	h := accessServer(t, token)
	for _, hdr := range [][]string{
		nil,
		{"Authorization", "Bearer "},
		{"Authorization", "Bearer s3cret"},
		{"Authorization", "Bearer s"},
		{"Authorization", "Bearer " + token + "x"},
		{"Authorization", token},
		{"Authorization", "Basic " + token},
		{"Cookie", "dsh_token=s3cret"},
		{"Cookie", "dsh_token="},
		{"Cookie", "other=" + token},
	} {
		resp := serveOne(h, http.MethodGet, "/api/v1/version", hdr...)
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%q: status %d, want 401", hdr, resp.StatusCode)
		}
		checkSecurityHeaders(t, "refused", resp)
	}
	for _, q := range []string{"s3cret", "", token + "x", "S3CRET-TOKEN"} {
		if resp := serveOne(h, http.MethodGet, "/api/v1/version?token="+q); resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("Set-Cookie") != "" {
			t.Errorf("?token=%s: status %d Set-Cookie %q, want 401 and no cookie", q, resp.StatusCode, resp.Header.Get("Set-Cookie"))
		}
	}
	for _, hdr := range [][]string{{"Authorization", "Bearer " + token}, {"Cookie", "dsh_token=" + token}} {
		resp := serveOne(h, http.MethodGet, "/api/v1/version", hdr...)
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%q: status %d, want 200", hdr, resp.StatusCode)
		}
		checkSecurityHeaders(t, "answered", resp)
	}
	// A token in the address leaves it at once, as a cookie scripts
	// cannot read and other sites' requests do not carry.
	resp := serveOne(h, http.MethodGet, "/sessions/parent?token="+token+"&scope=descendants")
	if resp.StatusCode != http.StatusSeeOther || strings.Contains(resp.Header.Get("Location"), "token") || !strings.Contains(resp.Header.Get("Location"), "scope=descendants") {
		t.Errorf("?token=: status %d Location %q; want 303 to the address without the token", resp.StatusCode, resp.Header.Get("Location"))
	}
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == "dsh_token" {
			cookie = c
		}
	}
	if cookie == nil || cookie.Value != token || !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode || cookie.Path != "/" {
		t.Errorf("?token= cookie %+v; want dsh_token, HttpOnly, SameSite=Strict, Path=/", cookie)
	}
	// Read-only: no other method is served, with the token or without.
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch} {
		resp := serveOne(h, m, "/api/v1/version", "Authorization", "Bearer "+token)
		if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" {
			t.Errorf("%s: status %d Allow %q, want 405 and GET, HEAD", m, resp.StatusCode, resp.Header.Get("Allow"))
		}
	}
}

// Without a token only requests addressed to a loopback name are
// answered: a name that merely starts or ends like one is a foreign host
// (DNS rebinding).
func TestNoTokenAnswersOnlyLoopbackHosts(t *testing.T) {
	h := accessServer(t, "")
	for _, host := range []string{"localhost", "LocalHost:7420", "127.0.0.1:7420", "127.0.0.2", "[::1]:7420"} {
		resp := serveOne(h, http.MethodGet, "/api/v1/version", "Host", host)
		if resp.StatusCode != http.StatusOK {
			t.Errorf("Host %s: status %d, want 200", host, resp.StatusCode)
		}
		checkSecurityHeaders(t, "answered", resp)
	}
	for _, host := range []string{"localhost.attacker.example", "localhost.attacker.example:7420", "attacker-localhost", "127.0.0.1.attacker.example", "10.0.0.1:7420", "[::2]:7420", ""} {
		resp := serveOne(h, http.MethodGet, "/api/v1/version", "Host", host)
		if resp.StatusCode != http.StatusMisdirectedRequest {
			t.Errorf("Host %q: status %d, want 421", host, resp.StatusCode)
		}
		checkSecurityHeaders(t, "refused", resp)
	}
	if resp := serveOne(h, http.MethodPost, "/api/v1/version", "Host", "localhost"); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST on loopback: status %d, want 405", resp.StatusCode)
	}
}

// A server reachable from other machines must have a token: every address
// but a loopback IP or the name localhost itself, the wildcard addresses
// and names that only start like localhost included.
func TestNeedsTokenOffLoopback(t *testing.T) {
	for listen, want := range map[string]bool{
		"localhost:7420": false, "LOCALHOST:7420": false, "127.0.0.1:7420": false, "127.8.9.1:0": false, "[::1]:7420": false,
		":7420": true, "0.0.0.0:7420": true, "[::]:7420": true, "192.168.1.5:7420": true, "10.0.0.1:7420": true,
		"localhost.attacker.example:7420": true, "mylocalhost:7420": true, "example.com:7420": true,
	} {
		got, err := NeedsToken(listen)
		if err != nil || got != want {
			t.Errorf("NeedsToken(%q) = %v, %v; want %v", listen, got, err, want)
		}
	}
	if _, err := NeedsToken("7420"); err == nil || !strings.Contains(err.Error(), "7420") {
		t.Errorf("NeedsToken without a port: %v; want an error naming the value", err)
	}
}
