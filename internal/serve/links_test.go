package serve

import (
	"errors"
	"net/url"
	"strings"
	"testing"
)

// A session's link names exactly that session whatever its id holds: one
// path segment that decodes to the id, never a dot segment a browser or
// the server would resolve, and no query or fragment cut from it.
func TestSessionHrefIsOneSegment(t *testing.T) {
	for _, id := range []string{"plain", "a?b=c", "a#frag", "a/b", "../x", ".", "..", "...", "%2F", "a b", "é", "a;b", "a\\b"} {
		href := sessionHref(id)
		u, err := url.Parse(href)
		if err != nil {
			t.Errorf("%q: href %q does not parse: %v", id, href, err)
			continue
		}
		seg, ok := strings.CutPrefix(u.EscapedPath(), "/sessions/")
		if !ok || strings.Contains(seg, "/") || seg == "." || seg == ".." || u.RawQuery != "" || u.Fragment != "" {
			t.Errorf("%q: href %q is not one segment under /sessions/ (path %q, query %q, fragment %q)", id, href, u.EscapedPath(), u.RawQuery, u.Fragment)
		}
		if got, err := url.PathUnescape(seg); err != nil || got != id {
			t.Errorf("%q: href %q names %q, %v", id, href, got, err)
		}
	}
}

// An error shown in a live fragment is text, never markup.
func TestErrorFragmentEscapes(t *testing.T) {
	got := string(errorFragment(errors.New(`read <script>alert("x")</script> & <b>`)))
	if strings.Contains(got, "<script") || strings.Contains(got, "<b>") || !strings.Contains(got, "&lt;script&gt;") {
		t.Errorf("errorFragment = %q; want the error's markup escaped", got)
	}
	if !strings.HasPrefix(got, `<p class="error">`) || !strings.HasSuffix(got, `</p>`) {
		t.Errorf("errorFragment = %q; want one error paragraph", got)
	}
}
