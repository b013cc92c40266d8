// Package migrations embeds dsh's numbered SQL migrations
// (NNNN_name.sql, applied in order, each exactly once).
package migrations

import "embed"

// FS holds every migration file.
//
//go:embed *.sql
var FS embed.FS
