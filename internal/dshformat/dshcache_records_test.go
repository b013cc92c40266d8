package dshformat

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-project/dsh/internal/session"
)

// recordDoc is a per-record cache document with the given stamp and
// identity members.
func recordDoc(stamp int, identity string) []byte {
	return fmt.Appendf(nil, `{
  "version": %d,
  "record": {
    "identity": {%s},
    "rows": { "subagent": { "ver": 2, "seq": 0, "val": { "identity": { "mode": "continuable", "label": "cached", "seq": 0 } } } }
  }
}
`, stamp, identity)
}

// The per-record cache (DSH 0.2, domain version 7) serves a record only
// under DSH's full witness for the selected generation; everything it
// cannot use is a miss, reported as a skip, never an error.
func TestDSHCacheRecords(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	dir := filepath.Join(home, "storages", "session_projcache", "sessions")
	put := func(name string, doc []byte) { writeFile(t, dir, name, doc) }
	put("fresh.json", recordDoc(7, `"formatVersion":4,"createdAt":5,"cwd":"/w","isSeeded":false,"inheritedEventCount":0`))
	put("seeded.json", recordDoc(7, `"formatVersion":4,"createdAt":5,"cwd":"/w","isSeeded":true,"inheritedEventCount":16`))
	put("migrated.json", recordDoc(7, `"formatVersion":3,"createdAt":5,"cwd":"/w","isSeeded":false,"inheritedEventCount":0`))
	put("noformat.json", recordDoc(5, `"createdAt":5,"cwd":"/w","isSeeded":false,"inheritedEventCount":0`))
	put("v0.json", recordDoc(7, `"formatVersion":0,"createdAt":5,"cwd":"/w"`))
	put("future.json", recordDoc(8, `"formatVersion":4,"createdAt":5,"cwd":"/w"`))
	put("old.json", recordDoc(2, `"formatVersion":4,"createdAt":5,"cwd":"/w"`))
	put("broken.json", []byte(`{"version":7,`))
	put("badschema.json", recordDoc(7, `"formatVersion":"4","createdAt":5`))
	put("fresh.json.bak.202612011200", []byte("ignored"))
	put("not a key.json", recordDoc(7, `"formatVersion":4,"createdAt":5`))

	for _, path := range []string{filepath.Join(home, "storages"), filepath.Dir(dir), dir} {
		f, skips, err := ReadCache(ctx, path)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		var reasons []string
		for _, s := range skips {
			reasons = append(reasons, filepath.Base(s.Path))
		}
		if got := strings.Join(reasons, ","); got != "badschema.json,broken.json,future.json,old.json" {
			t.Fatalf("%s: skips %s", path, got)
		}
		if got := strings.Join(f.IDs(), ","); got != "fresh,migrated,noformat,seeded,v0" {
			t.Fatalf("%s: records %s", path, got)
		}
	}
	f, _, err := ReadHomeProjcache(ctx, home)
	if err != nil {
		t.Fatal(err)
	}
	cwd := "/w"
	header := func(id string, version int64, cut *int64) session.Header {
		return session.Header{Version: version, ID: id, CreatedAt: 5, Cwd: &cwd, SeedLength: cut}
	}
	cut16, cut15 := int64(16), int64(15)
	for _, c := range []struct {
		h    session.Header
		want bool
	}{
		{header("fresh", 4, nil), true},
		{header("fresh", 2, nil), false},                                          // another generation of the session
		{header("seeded", 4, &cut16), true},                                       // lineage matches
		{header("seeded", 4, &cut15), false},                                      // another cut
		{header("seeded", 4, nil), false},                                         // unseeded header
		{header("migrated", 4, nil), false},                                       // rows folded from format 3
		{header("noformat", 4, nil), false},                                       // no formatVersion: proves nothing
		{header("v0", 0, nil), true},                                              // a format-0 session's v7 record
		{session.Header{Version: 4, ID: "fresh", CreatedAt: 6, Cwd: &cwd}, false}, // another lifecycle
	} {
		if _, ok := f.Lookup(c.h); ok != c.want {
			t.Errorf("%s v%d cut %d: hit %v, want %v", c.h.ID, c.h.Version, c.h.InheritedCut(), ok, c.want)
		}
		// DSH 0.1.0-rc.8 reads no per-record cache.
		if _, ok := f.LookupRC8(c.h); ok {
			t.Errorf("%s v%d: LookupRC8 served a per-record record", c.h.ID, c.h.Version)
		}
	}

	if ids := f.RC8Only().IDs(); len(ids) != 0 {
		t.Errorf("RC8Only kept per-record records %v", ids)
	}

	// The rc.8 aggregate serves format-0 sessions only.
	agg, err := readCache(t, cacheDoc)
	if err != nil {
		t.Fatal(err)
	}
	c1 := session.Header{ID: "c1", CreatedAt: 10, Cwd: &cwd}
	if _, ok := agg.Lookup(c1); !ok {
		t.Fatal("aggregate record missed a format-0 session")
	}
	if _, ok := agg.LookupRC8(c1); !ok {
		t.Fatal("rc.8's own aggregate record missed under LookupRC8")
	}
	if agg.RC8Only() != agg {
		t.Fatal("RC8Only copied a cache that is all rc.8's")
	}
	c1.Version = 4
	if _, ok := agg.Lookup(c1); ok {
		t.Fatal("aggregate record served a format-4 session")
	}

	// A home with no tree falls back to the legacy aggregate; with
	// neither it has no cache.
	bare := t.TempDir()
	if f, _, err := ReadHomeProjcache(ctx, bare); f != nil || err != nil {
		t.Fatalf("bare home: %v %v", f, err)
	}
	writeFile(t, bare, "storages/session_projcache.json", []byte(cacheDoc))
	if f, _, err := ReadHomeProjcache(ctx, bare); err != nil || len(f.IDs()) != 2 {
		t.Fatalf("legacy home: %v %v", f, err)
	}
}
