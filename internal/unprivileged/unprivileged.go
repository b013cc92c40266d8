// Package unprivileged lets a test run a subprocess as a user without root's
// powers, so that a check resting on file permissions (a read-only database,
// a directory dsh may not write to) means something when the suite itself
// runs as root, as CI does. When the test already runs as an ordinary user,
// that user is the unprivileged one and nothing changes hands.
//
// Use it in three steps:
//
//	u := unprivileged.Require(t)           // or Lookup, to skip in your own words
//	exe := unprivileged.Program(t, u, "dsh") // this test binary, reachable by u
//	u.Reach(t, dir)                         // let u walk down to the test's files
//	cmd := u.Command(ctx, exe, args...)     // runs as u (nobody, under root)
//
// Program suits a test binary whose TestMain plays a role chosen by the
// program's name (testscript.Main) or by the environment; Install places any
// other executable. The test sets the modes it means to check (0444 files, a
// 0555 directory) itself; Give hands a file over when ownership matters.
package unprivileged

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// NobodyName is the account a root test drops to.
const NobodyName = "nobody"

// User is who an unprivileged subprocess runs as.
type User struct {
	Name     string
	UID, GID uint32
	// Switch is set when the test runs as root and a subprocess must change
	// to this user; unset when the test's own user is already unprivileged.
	Switch bool
}

var (
	lookupOnce sync.Once
	lookedUp   User
	lookupErr  error
)

// Lookup returns the user unprivileged subprocesses run as: the test's own
// user when it is not root, nobody when it is. The error says why there is
// none (no such account, a platform without credentials, a kernel or
// container that refuses the switch); a test passes it to t.Skip.
func Lookup() (User, error) {
	lookupOnce.Do(func() { lookedUp, lookupErr = lookup() })
	return lookedUp, lookupErr
}

// Require is Lookup for a test that cannot mean anything without such a
// user: it skips t, naming the reason, when there is none.
func Require(t testing.TB) User {
	t.Helper()
	u, err := Lookup()
	if err != nil {
		t.Skipf("cannot run as an unprivileged user: %v", err)
	}
	return u
}

func lookup() (User, error) {
	if !credentialsSupported {
		return User{}, errors.New("this platform has no process credentials to switch")
	}
	euid := os.Geteuid()
	if euid != 0 {
		name := strconv.Itoa(euid)
		if cur, err := user.Current(); err == nil {
			name = cur.Username
		}
		return User{Name: name, UID: uint32(euid), GID: uint32(os.Getegid())}, nil
	}
	acct, err := user.Lookup(NobodyName)
	if err != nil {
		return User{}, fmt.Errorf("running as root and no %q account to drop to: %w", NobodyName, err)
	}
	uid, err := strconv.ParseUint(acct.Uid, 10, 32)
	if err != nil {
		return User{}, fmt.Errorf("account %q has uid %q: %w", NobodyName, acct.Uid, err)
	}
	gid, err := strconv.ParseUint(acct.Gid, 10, 32)
	if err != nil {
		return User{}, fmt.Errorf("account %q has gid %q: %w", NobodyName, acct.Gid, err)
	}
	if uid == 0 {
		return User{}, fmt.Errorf("account %q has uid 0", NobodyName)
	}
	u := User{Name: NobodyName, UID: uint32(uid), GID: uint32(gid), Switch: true}
	if err := u.probe(); err != nil {
		return User{}, err
	}
	return u, nil
}

// probe checks once that the kernel lets this process take u's identity (a
// container without CAP_SETUID does not), by running true(1) as u.
func (u User) probe() error {
	truePath, err := exec.LookPath("true")
	if err != nil {
		// Nothing cheap to probe with: the first real command will tell.
		return nil
	}
	if err := u.Command(context.Background(), truePath).Run(); err != nil {
		return fmt.Errorf("cannot start a process as %s (uid %d): %w", u.Name, u.UID, err)
	}
	return nil
}

// Command returns a command that runs path as u. Its environment, working
// directory and streams are the caller's to set, as for exec.Command; path
// and the working directory must be reachable by u (see Program and Reach).
func (u User) Command(ctx context.Context, path string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, path, args...)
	if u.Switch {
		setCredential(cmd, u.UID, u.GID)
	}
	return cmd
}

// Reach lets u walk from the file system root down to path: every directory
// on the way that u may not search is given search permission for others
// (o+x, never read or write). Only directories under the temporary directory
// are changed (a test's own); any other blocking directory fails t. Nothing
// is done when u is the test's own user.
func (u User) Reach(t testing.TB, path string) {
	t.Helper()
	if err := u.reach(path); err != nil {
		t.Fatal(err)
	}
}

func (u User) reach(path string) error {
	if !u.Switch {
		return nil
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	tmp, err := filepath.EvalSymlinks(os.TempDir())
	if err != nil {
		return err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return err
	}
	fi, err := os.Stat(real)
	if err != nil {
		return err
	}
	dir := real
	if !fi.IsDir() {
		dir = filepath.Dir(real)
	}
	// Walk up, collecting the directories, then open them top down.
	var chain []string
	for d := dir; ; d = filepath.Dir(d) {
		chain = append(chain, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	for i := len(chain) - 1; i >= 0; i-- {
		d := chain[i]
		fi, err := os.Stat(d)
		if err != nil {
			return err
		}
		if u.maySearch(fi) {
			continue
		}
		if !within(tmp, d) {
			return fmt.Errorf("%s may not search %s, which lies outside the temporary directory %s (refusing to change it)", u.Name, d, tmp)
		}
		if err := os.Chmod(d, fi.Mode().Perm()|0o001); err != nil {
			return fmt.Errorf("let %s search %s: %w", u.Name, d, err)
		}
	}
	return nil
}

func within(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// maySearch says whether u may search the directory fi by its mode bits.
func (u User) maySearch(fi fs.FileInfo) bool {
	uid, gid, ok := owner(fi)
	perm := fi.Mode().Perm()
	switch {
	case !ok:
		return perm&0o001 != 0
	case uid == u.UID:
		return perm&0o100 != 0
	case gid == u.GID:
		return perm&0o010 != 0
	default:
		return perm&0o001 != 0
	}
}

// Give hands paths over to u, so that u's own permission bits (the owner's)
// govern them, as for a user's own files. Nothing is done when u is the
// test's own user.
func (u User) Give(t testing.TB, paths ...string) {
	t.Helper()
	if !u.Switch {
		return
	}
	for _, p := range paths {
		if err := os.Lchown(p, int(u.UID), int(u.GID)); err != nil {
			t.Fatalf("give %s to %s: %v", p, u.Name, err)
		}
	}
}

// Program returns this test binary installed as dir/name in a fresh
// directory u can reach, removed when t ends. The name is what a TestMain
// dispatching on os.Args[0] (testscript.Main) sees.
func Program(t testing.TB, u User, name string) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatalf("locate the test binary: %v", err)
	}
	return Install(t, u, self, name)
}

// Install places a copy of the executable src (a hard link where the file
// system allows) as name in a fresh directory u can reach and run from,
// removed when t ends, and returns its path.
func Install(t testing.TB, u User, src, name string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	u.Reach(t, dir)
	dst, err := InstallIn(dir, src, name)
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// InstallIn is Install into a directory the caller made and will remove
// (for harnesses without a testing.TB, such as a testscript command); dir
// must be reachable by the user.
func InstallIn(dir, src, name string) (string, error) {
	dst := filepath.Join(dir, name)
	if err := os.Link(src, dst); err == nil {
		if fi, err := os.Stat(dst); err == nil && fi.Mode().Perm()&0o005 == 0o005 {
			return dst, nil
		}
		// A hard link shares the mode; a copy gets its own.
		if err := os.Remove(dst); err != nil {
			return "", err
		}
	}
	in, err := os.Open(src)
	if err != nil {
		return "", err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		return "", err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return "", fmt.Errorf("install %s: %w", dst, err)
	}
	if err := out.Close(); err != nil {
		return "", err
	}
	return dst, nil
}

// ReachDir is Reach for harnesses without a testing.TB.
func (u User) ReachDir(path string) error { return u.reach(path) }
