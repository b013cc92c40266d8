// Package migrations embeds dsh's numbered SQL migrations
// (NNNN_name.sql, applied in order, each exactly once): the SQLite ones at
// the top level and their PostgreSQL counterparts, with the same numbers and
// names, under postgres/.
package migrations

import (
	"embed"
	"io/fs"
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
