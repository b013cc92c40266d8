package dshformat

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// A DSH home ($DSH_HOME, default ~/.dsh; later-formats §13.1) holds the
// session logs under sessions/<project key>/<session dir>/ and DSH's
// storages under storages/, the projection cache among them. dsh reads
// only those two trees, never takes or touches a session.lock, never opens
// anything else in the home (credentials live there) and writes nothing.

// HomeSessionsDir returns the directory of session logs of a DSH home at
// path: path/sessions when it exists; otherwise path itself (the sessions/
// directory or one project directory named directly).
func HomeSessionsDir(path string) (string, error) {
	info, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("open DSH home: %w", err)
	}
	if !info.IsDir() {
		return "", fmt.Errorf("open DSH home %s: not a directory", path)
	}
	sessions := filepath.Join(path, "sessions")
	if info, err := os.Stat(sessions); err == nil && info.IsDir() {
		return sessions, nil
	}
	return path, nil
}

// OpenDSHHome opens the session logs of a DSH home as a JSONL source.
func OpenDSHHome(ctx context.Context, path string) (Source, error) {
	dir, err := HomeSessionsDir(path)
	if err != nil {
		return nil, err
	}
	return OpenJSONL(ctx, dir)
}

// ReadHomeProjcache reads the projection cache of a DSH home: the
// per-record tree storages/session_projcache/sessions/ when it holds any
// record file (it is authoritative), otherwise the legacy aggregate
// storages/session_projcache.json when there is one. A home without either
// has no cache: (nil, nil, nil).
func ReadHomeProjcache(ctx context.Context, path string) (*CacheFile, []RecordSkip, error) {
	storages := filepath.Join(path, "storages")
	tree := filepath.Join(storages, "session_projcache", "sessions")
	if entries, err := os.ReadDir(tree); err == nil && len(entries) > 0 {
		return ReadCacheRecords(ctx, tree)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("read projection cache: %w", err)
	}
	legacy := filepath.Join(storages, "session_projcache.json")
	if _, err := os.Stat(legacy); errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	f, err := ReadCacheFile(ctx, legacy)
	return f, nil, err
}
