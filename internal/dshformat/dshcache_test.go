package dshformat

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/dsh-project/dsh/internal/session"
)

const cacheDoc = `{
  "unit": {
    "name": "session_projcache",
    "version": 3
  },
  "global": null,
  "tables": {
    "sessions": {
      "c1": {
        "identity": { "createdAt": 10, "cwd": "/w" },
        "rows": { "subagent": { "ver": 2, "seq": 4, "val": { "identity": { "mode": "continuable", "seq": 0 } } } }
      },
      "c2": { "identity": { "createdAt": 11 }, "rows": { "x": { "ver": 0, "seq": -1, "val": null, "extra": 1 } }, "extra": true }
    }
  }
}
`

func readCache(t *testing.T, doc string) (*CacheFile, error) {
	t.Helper()
	return ReadCacheFile(context.Background(), writeFile(t, t.TempDir(), "session_projcache.json", []byte(doc)))
}

// Records are served only to a header of the same identity (createdAt,
// and cwd present-and-equal or absent in both); values come back compact.
func TestDSHCacheLookup(t *testing.T) {
	f, err := readCache(t, cacheDoc)
	if err != nil {
		t.Fatal(err)
	}
	if ids := f.IDs(); strings.Join(ids, ",") != "c1,c2" {
		t.Fatalf("ids %v", ids)
	}
	rows, ok := f.Lookup(session.Header{ID: "c1", CreatedAt: 10, Cwd: ptr("/w")})
	if !ok || rows["subagent"].Ver != 2 || rows["subagent"].Seq != 4 || string(rows["subagent"].Val) != `{"identity":{"mode":"continuable","seq":0}}` {
		t.Fatalf("c1 rows %+v %v", rows, ok)
	}
	if rows, ok := f.Lookup(session.Header{ID: "c2", CreatedAt: 11}); !ok || rows["x"].Seq != -1 || string(rows["x"].Val) != "null" {
		t.Fatalf("c2 rows %+v %v", rows, ok)
	}
	for _, h := range []session.Header{
		{ID: "c1", CreatedAt: 11, Cwd: ptr("/w")},
		{ID: "c1", CreatedAt: 10},
		{ID: "c1", CreatedAt: 10, Cwd: ptr("/other")},
		{ID: "c2", CreatedAt: 11, Cwd: ptr("/w")},
		{ID: "c3", CreatedAt: 10},
	} {
		if _, ok := f.Lookup(h); ok {
			t.Errorf("lookup %+v matched", h)
		}
	}
}

// Files DSH's storage layer refuses to open are refused, by kind.
func TestDSHCacheRefusals(t *testing.T) {
	unit := `"unit":{"name":"session_projcache","version":3}`
	for _, c := range []struct{ doc, kind string }{
		{`not json`, "malformed-medium"},
		{`[]`, "malformed-medium"},
		{`{"unit":{"name":"other","version":3}}`, "malformed-medium"},
		{`{"unit":{"name":"session_projcache","version":2}}`, "version-mismatch"},
		{`{` + unit + `,"tables":[]}`, "malformed-medium"},
		{`{` + unit + `,"tables":{"sessions":5}}`, "malformed-medium"},
		{`{` + unit + `,"tables":{"sessions":{"a":{"identity":{"createdAt":-1},"rows":{}}}}}`, "invalid-record"},
		{`{` + unit + `,"tables":{"sessions":{"a":{"identity":{"createdAt":1,"cwd":3},"rows":{}}}}}`, "invalid-record"},
		{`{` + unit + `,"tables":{"sessions":{"a":{"identity":{"createdAt":1},"rows":{"k":{"ver":1,"seq":-2,"val":1}}}}}}`, "invalid-record"},
		{`{` + unit + `,"tables":{"sessions":{"a":{"identity":{"createdAt":1},"rows":{"k":{"ver":1.5,"seq":0,"val":1}}}}}}`, "invalid-record"},
		{`{` + unit + `,"tables":{"sessions":{"a":{"identity":{"createdAt":1},"rows":{"k":{"ver":1,"seq":0}}}}}}`, "invalid-record"},
	} {
		_, err := readCache(t, c.doc)
		var pe *CacheFileError
		if !errors.As(err, &pe) || pe.Kind != c.kind || errors.Is(err, ErrCorrupt) == (c.kind == "version-mismatch") {
			t.Errorf("%s: %v, want %s", c.doc, err, c.kind)
		}
	}
	if f, err := readCache(t, `{`+unit+`,"global":null}`); err != nil || len(f.IDs()) != 0 {
		t.Errorf("no tables: %v", err)
	}
}
