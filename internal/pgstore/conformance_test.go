package pgstore

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/pgtest"
	"github.com/dsh-project/dsh/internal/storetest"
)

// TestConformance runs the backend contract's suite against PostgreSQL:
// each case in a database of its own, created and dropped on the test
// server.
func TestConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the conformance suite on PostgreSQL (about 15 s); sqlitepersist runs it in short mode, go test ./... runs it here")
	}
	admin := pgtest.AdminURL(t)
	storetest.Run(t, storetest.Target{
		New: func(ctx context.Context) (string, func(), error) {
			url, drop, err := pgtest.CreateDatabase(ctx, admin)
			if err != nil {
				return "", nil, err
			}
			return url, func() { drop() }, nil
		},
		Open: func(ctx context.Context, addr string, readOnly bool) (backend.Backend, error) {
			if readOnly {
				return OpenReadOnly(ctx, addr)
			}
			return Open(ctx, addr)
		},
		Fingerprint: fingerprint,
	})
}

// fingerprint is every row of every table in the database's public schema,
// in a fixed order: a read-only open must leave it unchanged.
func fingerprint(addr string) (string, error) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, addr)
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename")
	if err != nil {
		return "", err
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return "", err
	}
	var sb strings.Builder
	for _, table := range tables {
		var dump *string
		// Every row as text, sorted: the table's whole content.
		q := fmt.Sprintf(`SELECT string_agg(t::text, E'\n' ORDER BY t::text) FROM %s AS t`, pgx.Identifier{table}.Sanitize())
		if err := conn.QueryRow(ctx, q).Scan(&dump); err != nil {
			return "", err
		}
		fmt.Fprintf(&sb, "== %s\n", table)
		if dump != nil {
			sb.WriteString(*dump)
			sb.WriteByte('\n')
		}
	}
	return sb.String(), nil
}
