package dshformat

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/dsh-project/dsh/internal/session"
)

var oracleCorpora = []string{"a-continuable-and-oneshot", "g-nested-descendants", "j-medium"}

// oracleHeader is a header as expected.json lists it.
type oracleHeader struct {
	Version         int64   `json:"version"`
	ID              string  `json:"id"`
	CreatedAt       int64   `json:"createdAt"`
	Cwd             *string `json:"cwd"`
	ParentSession   *string `json:"parentSession"`
	SeedLength      *int64  `json:"seedLength"`
	Origin          *string `json:"origin"`
	DelegationDepth *int64  `json:"delegationDepth"`
	AgentPreset     *string `json:"agentPreset"`
}

func (o oracleHeader) header() session.Header {
	return session.Header{Version: o.Version, ID: o.ID, CreatedAt: o.CreatedAt, Cwd: o.Cwd, ParentSession: o.ParentSession,
		SeedLength: o.SeedLength, Origin: o.Origin, DelegationDepth: o.DelegationDepth, AgentPreset: o.AgentPreset}
}

type oracleExpected struct {
	Files struct {
		SQLite          string `json:"sqlite"`
		JSONL           string `json:"jsonl"`
		JSONLPlain      string `json:"jsonlPlain"`
		ProjectionCache string `json:"projectionCache"`
	} `json:"files"`
	Corpus json.RawMessage `json:"corpus"`
}

func loadOracle(t *testing.T, name string) (string, oracleExpected, []oracleHeader, int) {
	dir := fixtureDir(t, filepath.Join("dsh-oracle", name))
	raw, err := os.ReadFile(filepath.Join(dir, "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var exp oracleExpected
	if err := json.Unmarshal(raw, &exp); err != nil {
		t.Fatal(err)
	}
	// corpus is the header list, or just {"sessions": N} for the large one.
	var headers []oracleHeader
	if err := json.Unmarshal(exp.Corpus, &headers); err == nil {
		return dir, exp, headers, len(headers)
	}
	var count struct {
		Sessions int `json:"sessions"`
	}
	if err := json.Unmarshal(exp.Corpus, &count); err != nil {
		t.Fatalf("expected.json corpus: %v", err)
	}
	return dir, exp, nil, count.Sessions
}

// Each variant of each oracle corpus (zstd JSONL, plain JSONL, schema-17
// SQLite) gives the headers expected.json lists and the same events.
func TestOracleVariantsAgree(t *testing.T) {
	for _, name := range oracleCorpora {
		t.Run(name, func(t *testing.T) {
			dir, exp, want, count := loadOracle(t, name)
			variants := map[string]Source{
				"sqlite": openSQLite(t, filepath.Join(dir, exp.Files.SQLite)),
				"jsonl":  openJSONL(t, filepath.Join(dir, exp.Files.JSONL)),
			}
			if exp.Files.JSONLPlain != "" {
				variants["jsonl-plain"] = openJSONL(t, filepath.Join(dir, exp.Files.JSONLPlain))
			}
			read := make(map[string]map[string]*Session)
			for v, src := range variants {
				if p := src.Problems(); len(p) > 0 {
					t.Fatalf("%s: problem %v", v, p[0].Err)
				}
				read[v] = readAll(t, src)
				if len(read[v]) != count {
					t.Fatalf("%s: %d sessions, expected.json lists %d", v, len(read[v]), count)
				}
			}
			for _, o := range want {
				h := o.header()
				// SQLite keeps an absent delegationDepth absent; JSONL
				// always writes it (storage-formats §1.2).
				assertSameHeader(t, "sqlite "+o.ID, read["sqlite"][o.ID].Header, h)
				if s := read["sqlite"][o.ID].Header; (s.DelegationDepth == nil) != (h.DelegationDepth == nil) {
					t.Fatalf("sqlite %s: delegationDepth presence differs", o.ID)
				}
				for _, v := range []string{"jsonl", "jsonl-plain"} {
					if read[v] != nil {
						assertSameHeader(t, v+" "+o.ID, read[v][o.ID].Header, withDepth(h))
					}
				}
			}
			for id, s := range read["sqlite"] {
				if s.Torn != nil {
					t.Errorf("sqlite %s: torn tail %s", id, s.Torn.Reason)
				}
				for v, sessions := range read {
					other := sessions[id]
					if other == nil {
						t.Fatalf("%s lacks session %s", v, id)
					}
					if v != "sqlite" {
						assertSameHeader(t, v+" "+id, other.Header, withDepth(s.Header))
					}
					assertSameEvents(t, v+" "+id, other.Events, s.Events)
					if other.Torn != nil {
						t.Errorf("%s %s: torn tail %s", v, id, other.Torn.Reason)
					}
				}
			}
		})
	}
}

// The packed rows and zstd BLOBs of the large corpus really are exercised.
func TestOracleSQLiteHasPackedRowsAndBlobs(t *testing.T) {
	dir, exp, _, _ := loadOracle(t, "j-medium")
	db := openRawDB(t, filepath.Join(dir, exp.Files.SQLite))
	var packed, blobs, provenance int
	err := db.QueryRow(`SELECT
		(SELECT count(*) FROM events WHERE ignorable = 0),
		(SELECT count(*) FROM events WHERE typeof(data) = 'blob'),
		(SELECT count(*) FROM events WHERE source_event_seqs IS NOT NULL)`).Scan(&packed, &blobs, &provenance)
	if err != nil {
		t.Fatal(err)
	}
	if packed == 0 || blobs == 0 || provenance == 0 {
		t.Fatalf("j-medium: %d packed rows, %d blobs, %d provenance lists", packed, blobs, provenance)
	}
}

// The projection cache file parses, and each record's identity matches the
// header of its session in the corpus.
func TestOracleProjectionCache(t *testing.T) {
	ctx := context.Background()
	for _, name := range oracleCorpora {
		dir, exp, _, _ := loadOracle(t, name)
		cache, err := ReadProjcacheFile(ctx, filepath.Join(dir, exp.Files.ProjectionCache))
		if err != nil {
			t.Fatal(err)
		}
		sessions := readAll(t, openSQLite(t, filepath.Join(dir, exp.Files.SQLite)))
		ids := cache.IDs()
		if len(ids) == 0 {
			t.Fatalf("%s: empty projection cache", name)
		}
		for _, id := range ids {
			s, ok := sessions[id]
			if !ok {
				t.Fatalf("%s: cache record %s has no session", name, id)
			}
			rows, ok := cache.Lookup(s.Header)
			if !ok {
				t.Fatalf("%s: cache record %s does not match its header", name, id)
			}
			for key, row := range rows {
				if row.Seq >= int64(len(s.Events)) || !json.Valid(row.Val) {
					t.Fatalf("%s %s row %s: seq %d over a %d-event log, val %s", name, id, key, row.Seq, len(s.Events), row.Val)
				}
			}
			other := s.Header
			other.CreatedAt++
			if _, ok := cache.Lookup(other); ok {
				t.Fatalf("%s: record %s matched another createdAt", name, id)
			}
		}
	}
}

// Sources are safe for concurrent use: reading every session from four
// goroutines gives what a sequential read gives.
func TestConcurrentReads(t *testing.T) {
	dir, exp, _, _ := loadOracle(t, "j-medium")
	for _, src := range []Source{openSQLite(t, filepath.Join(dir, exp.Files.SQLite)), openJSONL(t, filepath.Join(dir, exp.Files.JSONL))} {
		want := readAll(t, src)
		ids := make(chan string)
		type result struct {
			s   *Session
			err error
		}
		results := make(chan result)
		for range 4 {
			go func() {
				for id := range ids {
					s, err := src.Read(context.Background(), id)
					results <- result{s, err}
				}
			}()
		}
		go func() {
			for id := range want {
				ids <- id
			}
			close(ids)
		}()
		for range want {
			r := <-results
			if r.err != nil {
				t.Fatal(r.err)
			}
			assertSameEvents(t, r.s.Header.ID, r.s.Events, want[r.s.Header.ID].Events)
		}
	}
}
