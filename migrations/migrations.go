// Package migrations embeds dsh's numbered SQL migrations
// (NNNN_name.sql, applied in order, each exactly once): the SQLite ones at
// the top level and their PostgreSQL counterparts, with the same numbers and
// names, under postgres/.
package migrations

import (
	"embed"
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// FS holds every SQLite migration file.
//
//go:embed *.sql
var FS embed.FS

//go:embed postgres/*.sql
var postgresFS embed.FS

// PostgresFS holds every PostgreSQL migration file, at its root.
var PostgresFS = mustSub(postgresFS, "postgres")

func mustSub(fsys fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(fsys, dir)
	if err != nil {
		panic(err) // dir is a constant embedded above
	}
	return sub
}

// Migration is one numbered migration file.
type Migration struct {
	Version int
	Name    string
	SQL     string
	// Backfill is the part of the file after the line BackfillMarker: the
	// statements that fill what SQL created from the sessions already
	// stored, run by the store after SQL in the same transaction once per
	// chunk of sessions, whose ids it puts in the temporary table
	// dsh_backfill_ids (id) first, so that a long back-fill can report
	// its progress. "" when the file has no marker.
	Backfill string
}

// BackfillMarker separates a migration's schema from its back-fill.
const BackfillMarker = "-- dsh:backfill per chunk of sessions (ids in dsh_backfill_ids)"

var fileName = regexp.MustCompile(`^([0-9]{4})_([a-z0-9_]+)\.sql$`)

// Load reads the migration files at the root of fsys (FS or PostgresFS) in
// order. Their numbers must run 1, 2, 3, … without gaps: a store's schema
// version is "how many have been applied", whichever backend it is.
func Load(fsys fs.FS) ([]Migration, error) {
	names, err := fs.Glob(fsys, "*.sql")
	if err != nil {
		return nil, err
	}
	var ms []Migration
	for _, name := range names {
		m := fileName.FindStringSubmatch(name)
		if m == nil {
			return nil, fmt.Errorf("migration file %q is not named NNNN_name.sql", name)
		}
		v, _ := strconv.Atoi(m[1])
		text, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		schema, backfill, _ := strings.Cut(string(text), "\n"+BackfillMarker+"\n")
		ms = append(ms, Migration{Version: v, Name: m[2], SQL: schema, Backfill: backfill})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Version < ms[j].Version })
	for i, m := range ms {
		if m.Version != i+1 {
			return nil, fmt.Errorf("migration %04d_%s.sql: expected number %04d (numbers must start at 1 without gaps)", m.Version, m.Name, i+1)
		}
	}
	return ms, nil
}
