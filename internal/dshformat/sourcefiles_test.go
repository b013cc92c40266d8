package dshformat

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/boundedfile"
	"github.com/dsh-project/dsh/internal/dsherr"
)

// healthyLog is a readable log of session s.
func healthyLog() []byte {
	return []byte(testHeaderLine + "\n" + turnStart(0) + "\n" + turnEnd(1) + "\n")
}

// openWithin opens a JSONL source and fails the test if opening takes
// longer than a few seconds (a FIFO opened for reading blocks for ever).
func openWithin(t *testing.T, path string) (Source, error) {
	t.Helper()
	type opened struct {
		src Source
		err error
	}
	done := make(chan opened, 1)
	go func() {
		src, err := OpenJSONL(context.Background(), path)
		done <- opened{src, err}
	}()
	select {
	case o := <-done:
		if o.src != nil {
			t.Cleanup(func() { o.src.Close() })
		}
		return o.src, o.err
	case <-time.After(10 * time.Second):
		t.Fatalf("opening %s blocked", path)
		return nil, nil
	}
}

// Session files that are not regular files — a FIFO, links to devices, a
// directory named like a log, a loose FIFO — are each a problem naming the
// path and what it is (issue 23 item 3), never skipped in silence and never
// opened for reading (a FIFO would block). A dangling link is absent, as
// for DSH, whose lookup treats only a missing file as absent.
func TestNonRegularSessionFilesAreProblems(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "--w--/s/session.jsonl", healthyLog())
	mk := func(rel string) string {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if err := syscall.Mkfifo(mk("--w--/fifo/session.jsonl"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(mk("loose.jsonl"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", mk("--w--/zero/session.jsonl")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/urandom", mk("--w--/urandom/session.jsonl.zstd")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(mk("--w--/dir/session.jsonl"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "nowhere"), mk("--w--/dangling/session.jsonl")); err != nil {
		t.Fatal(err)
	}
	src, err := openWithin(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"--w--/fifo/session.jsonl":         "a FIFO",
		"loose.jsonl":                      "a FIFO",
		"--w--/zero/session.jsonl":         "a character device",
		"--w--/urandom/session.jsonl.zstd": "a character device",
		"--w--/dir/session.jsonl":          "a directory",
	}
	got := map[string]string{}
	for _, p := range src.Problems() {
		rel, _ := filepath.Rel(dir, p.Path)
		if !errors.Is(p.Err, boundedfile.ErrNotRegular) || !strings.Contains(p.Err.Error(), p.Path) {
			t.Errorf("%s: %v is not a not-regular refusal naming the path", rel, p.Err)
		}
		got[rel] = p.Err.Error()
	}
	for rel, kind := range want {
		if !strings.Contains(got[rel], kind) {
			t.Errorf("%s: problem %q, want one naming %s", rel, got[rel], kind)
		}
	}
	if len(got) != len(want) {
		t.Errorf("problems %v, want exactly %v", got, want)
	}
	if n := len(readAll(t, src)); n != 1 {
		t.Errorf("%d sessions offered, want the healthy one", n)
	}
}

// A FIFO named as the source itself is refused at once (issue 23 item 11).
func TestFIFOSourceRefused(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.jsonl")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := openWithin(t, p)
	if !errors.Is(err, boundedfile.ErrNotRegular) || !strings.Contains(err.Error(), "a FIFO") {
		t.Fatalf("open of a FIFO: %v", err)
	}
}

// A log that vanishes or is replaced by a FIFO after the corpus was opened
// is an unreadable log of that session alone (issue 23 item 4): the audit
// read reports it with the file, the other sessions still read, and the
// read never blocks.
func TestSessionFileChangedAfterOpen(t *testing.T) {
	for _, change := range []string{"removed", "fifo", "directory"} {
		t.Run(change, func(t *testing.T) {
			dir := t.TempDir()
			path := writeFile(t, dir, "--w--/s/session.jsonl", healthyLog())
			writeFile(t, dir, "--w--/t/session.jsonl", []byte(strings.Replace(string(healthyLog()), `"id":"s"`, `"id":"t"`, 1)))
			src, err := openWithin(t, dir)
			if err != nil {
				t.Fatal(err)
			}
			c, err := NewCorpus(context.Background(), src, "jsonl:"+dir)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			switch change {
			case "fifo":
				err = syscall.Mkfifo(path, 0o600)
			case "directory":
				err = os.Mkdir(path, 0o700)
			}
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{})
			var a *backend.AuditRead
			go func() {
				defer close(done)
				a, err = c.Audit(context.Background(), "s")
			}()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("the audit read blocked")
			}
			if err != nil {
				t.Fatalf("audit aborted: %v", err)
			}
			var fe *FileError
			if a.ReadErr == nil || !errors.As(a.ReadErr, &fe) || fe.Path != path || !strings.Contains(a.ReadErr.Error(), path) {
				t.Fatalf("read error %v, want a FileError naming %s", a.ReadErr, path)
			}
			if dsherr.CodeOf(a.ReadErr) != dsherr.StoreUnavailable || !errors.Is(a.ReadErr, backend.ErrLogUnreadable) {
				t.Fatalf("code %s", dsherr.CodeOf(a.ReadErr))
			}
			if other, err := c.Audit(context.Background(), "t"); err != nil || other.ReadErr != nil {
				t.Fatalf("the other session: %v %v", err, other)
			}
		})
	}
}

// A log in DSH's layout whose header names another session than its
// directory (also through a duplicate "id" key, the last of which JSON
// readers keep) is listed under the header's id and refused when read,
// kept as found: DSH verifies path identity (issue 23 item 5). Files
// outside DSH's layout are found by content and not checked.
func TestPathIdentityMismatch(t *testing.T) {
	dir := t.TempDir()
	mismatched := strings.Replace(testHeaderLine, `"id":"s"`, `"id":"d","id":"x"`, 1)
	writeFile(t, dir, "--w--/d/session.jsonl", []byte(mismatched+"\n"+turnStart(0)+"\n"))
	writeFile(t, dir, "--w--/s/session.jsonl", healthyLog())
	loose := strings.Replace(testHeaderLine, `"id":"s"`, `"id":"l"`, 1)
	writeFile(t, dir, "loose/other/session.jsonl", []byte(loose+"\n"))
	src := openJSONL(t, dir)
	headers, err := src.Headers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, h := range headers {
		ids = append(ids, h.ID)
	}
	if strings.Join(ids, ",") != "l,s,x" || len(src.Problems()) != 0 {
		t.Fatalf("offered %v, problems %v", ids, src.Problems())
	}
	_, err = src.Read(context.Background(), "x")
	ce := asCorrupt(t, err)
	if !strings.Contains(ce.Error(), `header id "x" does not match its session directory "d"`) {
		t.Fatalf("read: %v", err)
	}
	s, err := src.ReadAsFound(context.Background(), "x")
	if err != nil || s.Damage == nil || s.Header.ID != "x" || string(s.Damage.Raw) != turnStart(0)+"\n" {
		t.Fatalf("as found: %+v, %v", s, err)
	}
	for _, id := range []string{"s", "l"} {
		if _, err := src.Read(context.Background(), id); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
	}
}
