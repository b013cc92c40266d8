package dshformat

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/dsh-project/dsh/internal/boundedfile"
	"github.com/dsh-project/dsh/internal/jsjson"
	"github.com/dsh-project/dsh/internal/session"
)

// DSH's projection cache file ($DSH_HOME/storages/session_projcache.json,
// storage-formats §5.3–5.4): the storage unit "session_projcache" version 3
// with one table, sessions, mapping a session id to the projection rows
// folded from that session's log and the identity of the header they were
// folded from.

const (
	dshCacheUnit    = "session_projcache"
	dshCacheVersion = 3
)

// CacheFileError reports a projection cache file DSH itself would refuse
// to open. Kind is DSH's classification: "malformed-medium",
// "version-mismatch" or "invalid-record". Malformed media and invalid
// records match ErrCorrupt.
type CacheFileError struct {
	Path string
	Kind string
	Msg  string
}

func (e *CacheFileError) Error() string {
	return fmt.Sprintf("%s: projection cache %s: %s", e.Path, e.Kind, e.Msg)
}

// Is makes damaged caches (not a version mismatch) match ErrCorrupt.
func (e *CacheFileError) Is(target error) bool {
	return target == ErrCorrupt && e.Kind != "version-mismatch"
}

// CacheRow is one persisted projection row: the unit's state version,
// the last seq folded into it (-1 for none) and its state as JSON.
type CacheRow struct {
	Ver int64
	Seq int64
	Val json.RawMessage
}

type cacheRecord struct {
	createdAt int64
	cwd       *string
	rows      map[string]CacheRow
	// perRecord: read from a per-record document, whose identity is the
	// full lifecycle witness below (absent lineage reads as unseeded).
	perRecord           bool
	formatVersion       *int64
	isSeeded            bool
	inheritedEventCount int64
}

// CacheFile is a parsed projection cache file.
type CacheFile struct {
	records map[string]cacheRecord
}

// maxCacheFile bounds a projection cache file: DSH keeps one small
// record per session in it.
const maxCacheFile = 256 << 20

// ReadCacheFile reads and validates a projection cache file as DSH's
// storage layer does when it opens the unit; any failure is a
// *CacheFileError, as it would stop DSH's cache service from starting.
// The file is only read.
func ReadCacheFile(ctx context.Context, path string) (*CacheFile, error) {
	data, err := boundedfile.Read(ctx, path, maxCacheFile)
	if err != nil {
		return nil, fmt.Errorf("read projection cache: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	fail := func(kind, format string, args ...any) error {
		return &CacheFileError{Path: path, Kind: kind, Msg: fmt.Sprintf(format, args...)}
	}
	doc, err := jsjson.ParseObject(jsjson.WellFormedUTF8(data))
	if err != nil {
		return nil, fail("malformed-medium", "%v", err)
	}
	unitMember, _ := jsjson.LastMember(doc, "unit")
	unit, err := jsjson.ParseObject(unitMember.Value)
	if err != nil {
		return nil, fail("malformed-medium", "unit is not an object")
	}
	name, _ := jsjson.LastMember(unit, "name")
	if jsjson.UnquoteIfString(name.Value) != dshCacheUnit {
		return nil, fail("malformed-medium", "unit name is not %q", dshCacheUnit)
	}
	version, _ := jsjson.LastMember(unit, "version")
	if v, isNum := jsjson.NumberValue(version.Value); !isNum || v != dshCacheVersion {
		return nil, fail("version-mismatch", "unit version %s, dsh reads version %d", version.Value, dshCacheVersion)
	}
	f := &CacheFile{records: make(map[string]cacheRecord)}
	tablesMember, ok := jsjson.LastMember(doc, "tables")
	if !ok {
		return f, nil
	}
	tables, err := jsjson.ParseObject(tablesMember.Value)
	if err != nil {
		return nil, fail("malformed-medium", "tables is not an object")
	}
	for _, t := range tables {
		if _, err := jsjson.ParseObject(t.Value); err != nil {
			return nil, fail("malformed-medium", "table %q is not an object", t.Key)
		}
	}
	sessions, ok := jsjson.LastMember(tables, "sessions")
	if !ok {
		return f, nil
	}
	records, _ := jsjson.ParseObject(sessions.Value)
	for _, r := range records {
		rec, err := decodeCacheRecord(r.Value)
		if err != nil {
			return nil, fail("invalid-record", "session %q: %v", r.Key, err)
		}
		f.records[r.Key] = rec
	}
	return f, nil
}

func decodeCacheRecord(raw []byte) (cacheRecord, error) {
	var rec cacheRecord
	members, err := jsjson.ParseObject(raw)
	if err != nil {
		return rec, fmt.Errorf("record is not an object")
	}
	identityMember, _ := jsjson.LastMember(members, "identity")
	identity, err := jsjson.ParseObject(identityMember.Value)
	if err != nil {
		return rec, fmt.Errorf("identity is not an object")
	}
	created, _ := jsjson.LastMember(identity, "createdAt")
	n, _, ok := jsjson.SafeInteger(created.Value)
	if !ok || n < 0 {
		return rec, fmt.Errorf("identity.createdAt is not a non-negative safe integer")
	}
	rec.createdAt = n
	if cwd, present := jsjson.LastMember(identity, "cwd"); present {
		s, ok := jsjson.StringValue(cwd.Value)
		if !ok {
			return rec, fmt.Errorf("identity.cwd is not a string")
		}
		rec.cwd = &s
	}
	rowsMember, _ := jsjson.LastMember(members, "rows")
	rows, err := jsjson.ParseObject(rowsMember.Value)
	if err != nil {
		return rec, fmt.Errorf("rows is not an object")
	}
	rec.rows = make(map[string]CacheRow, len(rows))
	for _, r := range rows {
		fields, err := jsjson.ParseObject(r.Value)
		if err != nil {
			return rec, fmt.Errorf("row %q is not an object", r.Key)
		}
		var row CacheRow
		ver, _ := jsjson.LastMember(fields, "ver")
		if row.Ver, _, ok = jsjson.SafeInteger(ver.Value); !ok || row.Ver < 0 {
			return rec, fmt.Errorf("row %q: ver is not a non-negative safe integer", r.Key)
		}
		seq, _ := jsjson.LastMember(fields, "seq")
		if row.Seq, _, ok = jsjson.SafeInteger(seq.Value); !ok || row.Seq < -1 {
			return rec, fmt.Errorf("row %q: seq is not a safe integer >= -1", r.Key)
		}
		val, ok := jsjson.LastMember(fields, "val")
		if !ok {
			return rec, fmt.Errorf("row %q has no val", r.Key)
		}
		row.Val = jsjson.Canonical(val.Value, val.Canonical)
		rec.rows[r.Key] = row
	}
	return rec, nil
}

// Lookup returns the rows cached for h's session when the record's
// identity matches h (same createdAt; cwd equal or absent in both; an
// aggregate-file record only for a format-0 session). A
// per-record document must also prove the rest of DSH 0.2's witness: its
// formatVersion is h's format version (a record without one matches
// nothing), and its lineage (isSeeded, inheritedEventCount; absent =
// unseeded) is h's — so a seeded later-format header must be the one Read
// returned, which carries the cut (listing only looks up unseeded
// headers; import looks up the stored ones). A record of another
// identity — a recreated id, a swapped store, a migrated log — is a miss,
// never a verdict. The map is the caller's to keep.
func (f *CacheFile) Lookup(h session.Header) (map[string]CacheRow, bool) {
	rec, ok := f.records[h.ID]
	if !ok || rec.createdAt != h.CreatedAt || (rec.cwd == nil) != (h.Cwd == nil) || (rec.cwd != nil && *rec.cwd != *h.Cwd) {
		return nil, false
	}
	if !rec.perRecord && h.Version != session.FormatVersion {
		// The aggregate file is rc.8's, whose sessions are all format 0.
		return nil, false
	}
	if rec.perRecord {
		switch {
		case rec.formatVersion == nil || *rec.formatVersion != h.Version:
			return nil, false
		case rec.isSeeded != h.IsSeeded() || rec.inheritedEventCount != h.InheritedCut():
			return nil, false
		}
	}
	rows := make(map[string]CacheRow, len(rec.rows))
	for k, r := range rec.rows {
		rows[k] = r
	}
	return rows, true
}

// LookupRC8 is Lookup as DSH 0.1.0-rc.8 reads its cache: only records of
// its own aggregate file, none of a later release's per-record cache
// (whose identities a later fold, reading descriptor version 3, made).
func (f *CacheFile) LookupRC8(h session.Header) (map[string]CacheRow, bool) {
	if rec, ok := f.records[h.ID]; !ok || rec.perRecord {
		return nil, false
	}
	return f.Lookup(h)
}

// RC8Only returns the cache as DSH 0.1.0-rc.8 reads it: f without the
// records of a later release's per-record cache (f itself when it has
// none).
func (f *CacheFile) RC8Only() *CacheFile {
	out := &CacheFile{records: make(map[string]cacheRecord, len(f.records))}
	for id, rec := range f.records {
		if !rec.perRecord {
			out.records[id] = rec
		}
	}
	if len(out.records) == len(f.records) {
		return f
	}
	return out
}

// IDs returns the session ids the file holds records for, sorted.
func (f *CacheFile) IDs() []string {
	ids := make([]string, 0, len(f.records))
	for id := range f.records {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}
