package dshformat

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/dsh-project/dsh/internal/dshfixtures"
	"github.com/dsh-project/dsh/internal/session"
)

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

// loadOracle reads a corpus's expected.json and its header list: every
// header, or for the large corpus only the session count.
func loadOracle(t *testing.T, name string) (dshfixtures.Oracle, []oracleHeader, int) {
	t.Helper()
	exp := dshfixtures.LoadOracle(t, name)
	var headers []oracleHeader
	if err := json.Unmarshal(exp.Corpus, &headers); err == nil {
		return exp, headers, len(headers)
	}
	var count struct {
		Sessions int `json:"sessions"`
	}
	if err := json.Unmarshal(exp.Corpus, &count); err != nil {
		t.Fatalf("expected.json corpus: %v", err)
	}
	return exp, nil, count.Sessions
}

// Each variant of each oracle corpus (zstd JSONL, plain JSONL, schema-17
// SQLite) gives the headers expected.json lists and the same events.
func TestOracleVariantsAgree(t *testing.T) {
	for _, name := range dshfixtures.OracleCorpora {
		t.Run(name, func(t *testing.T) {
			exp, want, count := loadOracle(t, name)
			dir := exp.Dir
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
					dshfixtures.AssertSameEvents(t, v+" "+id, other.Events, s.Events)
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
	exp, _, _ := loadOracle(t, "j-medium")
	dir := exp.Dir
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
	for _, name := range dshfixtures.OracleCorpora {
		exp, _, _ := loadOracle(t, name)
		dir := exp.Dir
		cache, err := ReadCacheFile(ctx, filepath.Join(dir, exp.Files.ProjectionCache))
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
	exp, _, _ := loadOracle(t, "j-medium")
	dir := exp.Dir
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
			dshfixtures.AssertSameEvents(t, r.s.Header.ID, r.s.Events, want[r.s.Header.ID].Events)
		}
	}
}
