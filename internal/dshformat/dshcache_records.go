package dshformat

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/dsh-project/dsh/internal/jsjson"
)

// DSH's per-record projection cache (later-formats §13.5): from domain
// version 4 on, storages/session_projcache/sessions/<id>.json holds one
// document {"version": <stamp>, "record": {identity, rows}} per session.
// Version 7 (DSH 0.2.x) adds formatVersion to the identity, version 5
// isSeeded and inheritedEventCount. The rows are those of the version-3
// aggregate file.

// perRecordStamps are the domain versions a v7 reader accepts: 7 and its
// compatibleVersions 3–6.
const (
	minRecordStamp = 3
	maxRecordStamp = 7
)

// maxRecordFile bounds one record file (real ones are 4–94 KB).
const maxRecordFile = 16 << 20

// recordKey is the key syntax DSH's JSON storage accepts for a record file.
var recordKey = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// RecordSkip is a per-record cache file dsh read as absent, and why: DSH
// reads a malformed document or a foreign stamp as an absent record (one
// bad file never breaks the unit) and skips a record that fails the schema.
type RecordSkip struct {
	Path   string
	Reason string
}

// ReadCacheRecords reads DSH's per-record projection cache under dir —
// the session_projcache directory, its sessions/ subdirectory, or a DSH
// home's storages/ directory — into the same lookup as the aggregate file.
// Files that are not records (*.bak.*, *.lock, temporary files, keys DSH
// refuses) are ignored; a record dsh cannot use is left out and reported in
// the skip list: a cache miss, never a verdict. Nothing is written.
func ReadCacheRecords(ctx context.Context, dir string) (*CacheFile, []RecordSkip, error) {
	sessions, err := recordDir(dir)
	if err != nil {
		return nil, nil, err
	}
	entries, err := os.ReadDir(sessions)
	if err != nil {
		return nil, nil, fmt.Errorf("read projection cache records: %w", err)
	}
	f := &CacheFile{records: make(map[string]cacheRecord)}
	var skips []RecordSkip
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		key, isJSON := strings.CutSuffix(e.Name(), ".json")
		if !isJSON || !recordKey.MatchString(key) || !e.Type().IsRegular() {
			continue
		}
		path := filepath.Join(sessions, e.Name())
		rec, err := readRecordFile(path)
		if err != nil {
			skips = append(skips, RecordSkip{Path: path, Reason: err.Error()})
			continue
		}
		f.records[key] = rec
	}
	return f, skips, nil
}

// recordDir finds the sessions/ directory of a per-record cache.
func recordDir(dir string) (string, error) {
	for _, candidate := range []string{
		filepath.Join(dir, "session_projcache", "sessions"),
		filepath.Join(dir, "sessions"),
		dir,
	} {
		if info, err := os.Stat(candidate); err == nil && info.IsDir() && filepath.Base(candidate) == "sessions" {
			return candidate, nil
		}
	}
	return "", fmt.Errorf("%s: no per-record projection cache (session_projcache/sessions/) here", dir)
}

func readRecordFile(path string) (cacheRecord, error) {
	file, err := os.Open(path)
	if err != nil {
		return cacheRecord{}, err
	}
	defer file.Close()
	data, err := io.ReadAll(io.LimitReader(file, maxRecordFile+1))
	if err != nil {
		return cacheRecord{}, err
	}
	if len(data) > maxRecordFile {
		return cacheRecord{}, fmt.Errorf("larger than %d bytes", maxRecordFile)
	}
	return decodeRecordDocument(data)
}

// decodeRecordDocument reads one {"version", "record"} document.
func decodeRecordDocument(data []byte) (cacheRecord, error) {
	doc, err := jsjson.ParseObject(jsjson.WellFormedUTF8(data))
	if err != nil {
		return cacheRecord{}, fmt.Errorf("not a JSON object: %w", err)
	}
	version, _ := jsjson.LastMember(doc, "version")
	stamp, _, ok := jsjson.SafeInteger(version.Value)
	if !ok || stamp < minRecordStamp || stamp > maxRecordStamp {
		return cacheRecord{}, fmt.Errorf("domain version %s is not one dsh reads (%d–%d)", version.Value, minRecordStamp, maxRecordStamp)
	}
	record, ok := jsjson.LastMember(doc, "record")
	if !ok {
		return cacheRecord{}, errors.New("no record")
	}
	rec, err := decodeCacheRecord(record.Value)
	if err != nil {
		return cacheRecord{}, err
	}
	rec.perRecord = true
	identityMember, _ := jsjson.LastMember(mustObject(record.Value), "identity")
	identity := mustObject(identityMember.Value)
	if m, present := jsjson.LastMember(identity, "formatVersion"); present {
		n, negZero, ok := jsjson.SafeInteger(m.Value)
		if !ok || n < 0 || negZero {
			return cacheRecord{}, errors.New("identity.formatVersion is not a non-negative safe integer")
		}
		rec.formatVersion = &n
	}
	if m, present := jsjson.LastMember(identity, "isSeeded"); present {
		switch string(m.Value) {
		case "true":
			rec.isSeeded = true
		case "false":
		default:
			return cacheRecord{}, errors.New("identity.isSeeded is not a boolean")
		}
	}
	if m, present := jsjson.LastMember(identity, "inheritedEventCount"); present {
		n, _, ok := jsjson.SafeInteger(m.Value)
		if !ok || n < 0 {
			return cacheRecord{}, errors.New("identity.inheritedEventCount is not a non-negative safe integer")
		}
		rec.inheritedEventCount = n
	}
	return rec, nil
}

// mustObject parses an object already known to parse.
func mustObject(raw []byte) []jsjson.Member {
	members, _ := jsjson.ParseObject(raw)
	return members
}

// ReadCache reads DSH's projection cache at path, whichever layout it
// has: a directory is the per-record tree (its unusable records reported as
// skips), a file the rc.8 aggregate.
func ReadCache(ctx context.Context, path string) (*CacheFile, []RecordSkip, error) {
	if info, err := os.Stat(path); err == nil && info.IsDir() {
		return ReadCacheRecords(ctx, path)
	}
	f, err := ReadCacheFile(ctx, path)
	return f, nil, err
}
