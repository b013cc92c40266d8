package pgstore

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/pgtest"
)

func openT(t *testing.T, url string) *Store {
	t.Helper()
	s, err := Open(context.Background(), url)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestOpenMigratesOnceAndRecords(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	latest, err := LatestSchemaVersion()
	if err != nil {
		t.Fatal(err)
	}
	s := openT(t, url)
	v, err := s.SchemaVersion(ctx)
	if err != nil || v != latest {
		t.Fatalf("SchemaVersion = %d, %v; want %d", v, err, latest)
	}
	var n int
	if err := s.pool.QueryRow(ctx, "SELECT count(*) FROM "+migrationsTable).Scan(&n); err != nil || n != latest {
		t.Fatalf("recorded migrations = %d, %v; want %d", n, err, latest)
	}
	// A second open finds nothing to do.
	openT(t, url)
	if err := s.pool.QueryRow(ctx, "SELECT count(*) FROM "+migrationsTable).Scan(&n); err != nil || n != latest {
		t.Fatalf("after reopen: recorded migrations = %d, %v; want %d", n, err, latest)
	}
}

// A libpq keyword/value string opens the same database as its URL, and
// names it with the password redacted.
func TestOpenKeywordValue(t *testing.T) {
	ctx := context.Background()
	u, err := url.Parse(pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	kv := fmt.Sprintf("host=%s dbname=%s user=%s", u.Hostname(), strings.TrimPrefix(u.Path, "/"), u.User.Username())
	if port := u.Port(); port != "" {
		kv += " port=" + port
	}
	pass, _ := u.User.Password()
	kv += " password='" + strings.ReplaceAll(pass, "'", `\'`) + "'"
	if mode := u.Query().Get("sslmode"); mode != "" {
		kv += " sslmode=" + mode
	}
	s := openT(t, kv)
	if v, err := s.SchemaVersion(ctx); err != nil || v == 0 {
		t.Fatalf("SchemaVersion = %d, %v", v, err)
	}
	if !strings.Contains(s.Path(), "password=xxxxx") || (pass != "" && strings.Contains(s.Path(), pass)) {
		t.Errorf("Path() = %q, want the password redacted", s.Path())
	}
	ro, err := OpenReadOnly(ctx, kv)
	if err != nil {
		t.Fatalf("OpenReadOnly: %v", err)
	}
	ro.Close()
}

// Several machines running `dsh init` at once: the advisory lock makes one
// apply the migrations and the others find them applied.
func TestConcurrentOpenIsSafe(t *testing.T) {
	url := pgtest.NewDatabase(t)
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := Open(context.Background(), url)
			if err == nil {
				s.Close()
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("open %d: %v", i, err)
		}
	}
	s := openT(t, url)
	var n2 int
	if err := s.pool.QueryRow(context.Background(), "SELECT count(*) FROM "+migrationsTable).Scan(&n2); err != nil {
		t.Fatal(err)
	}
	if latest, _ := LatestSchemaVersion(); n2 != latest {
		t.Fatalf("recorded migrations = %d, want %d (each once)", n2, latest)
	}
}

func wantStoreError(t *testing.T, err error, sentinel error, fragments ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %v", sentinel)
	}
	if dsherr.CodeOf(err) != dsherr.StoreUnavailable {
		t.Errorf("code = %q, want %q (%v)", dsherr.CodeOf(err), dsherr.StoreUnavailable, err)
	}
	if sentinel != nil && !errors.Is(err, sentinel) {
		t.Errorf("error %v does not match %v", err, sentinel)
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") {
		t.Errorf("error is not one line: %q", msg)
	}
	for _, f := range fragments {
		if !strings.Contains(msg, f) {
			t.Errorf("error %q does not mention %q", msg, f)
		}
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	openT(t, url).Close()
	pgtest.Exec(t, url, "INSERT INTO "+migrationsTable+" VALUES (999, 'future', 0)")
	_, err := Open(ctx, url)
	wantStoreError(t, err, backend.ErrSchemaTooNew, "schema version 999", "upgrade dsh")
	_, err = OpenReadOnly(ctx, url)
	wantStoreError(t, err, backend.ErrSchemaTooNew, "schema version 999")
}

func TestOpenRefusesForeignSchema(t *testing.T) {
	url := pgtest.NewDatabase(t)
	pgtest.Exec(t, url, "CREATE TABLE schema_migrations (version bigint)")
	_, err := Open(context.Background(), url)
	wantStoreError(t, err, backend.ErrForeignDatabase, "not a dsh database")
	pgtest.Exec(t, url, "SELECT 1 FROM schema_migrations") // untouched
	var tables int
	s, err := connect(context.Background(), url, true)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.pool.QueryRow(context.Background(), "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").Scan(&tables)
	if tables != 1 {
		t.Fatalf("refused open left %d tables, want the foreign one only", tables)
	}
}

func TestOpenReadOnlyRefusesUninitialized(t *testing.T) {
	url := pgtest.NewDatabase(t)
	_, err := OpenReadOnly(context.Background(), url)
	wantStoreError(t, err, backend.ErrNoDatabase, "not initialized", "dsh init")
}

func TestConnectionErrors(t *testing.T) {
	ctx := context.Background()
	admin := pgtest.AdminURL(t)
	t.Run("missing database", func(t *testing.T) {
		url := pgtest.WithDatabase(t, admin, "dsh_test_no_such_database")
		_, err := OpenReadOnly(ctx, url)
		wantStoreError(t, err, backend.ErrNoDatabase, "dsh_test_no_such_database", "does not exist")
	})
	t.Run("unknown role", func(t *testing.T) {
		url := strings.Replace(pgtest.WithDatabase(t, admin, "postgres"), "//postgres@", "//dsh_no_such_role:hunter2@", 1)
		if !strings.Contains(url, "hunter2") {
			t.Skipf("admin URL %s has another user; cannot build a bad-credentials URL", Redact(admin))
		}
		_, err := Open(ctx, url)
		wantStoreError(t, err, backend.ErrAuthentication, "authentication failed", "dsh_no_such_role")
		if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("error shows the password: %v", err)
		}
	})
	t.Run("unreachable", func(t *testing.T) {
		// Port 1 on the loopback: nothing listens, the connection is refused.
		_, err := Open(ctx, "postgres://someone:hunter2@127.0.0.1:1/dsh?sslmode=disable")
		wantStoreError(t, err, backend.ErrUnreachable, "cannot connect", "127.0.0.1")
		if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("error shows the password: %v", err)
		}
	})
	t.Run("unreachable keyword/value", func(t *testing.T) {
		_, err := Open(ctx, "host=127.0.0.1 port=1 user=someone password='hunter2' dbname=dsh sslmode=disable")
		wantStoreError(t, err, backend.ErrUnreachable, "cannot connect", "127.0.0.1", "password=xxxxx")
		if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("error shows the password: %v", err)
		}
	})
	t.Run("malformed URL", func(t *testing.T) {
		_, err := Open(ctx, "postgres://someone:hunter2@127.0.0.1:notaport/dsh")
		if dsherr.CodeOf(err) != dsherr.InvalidInput {
			t.Fatalf("code = %q, want %q (%v)", dsherr.CodeOf(err), dsherr.InvalidInput, err)
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("error shows the password: %v", err)
		}
	})
}

// A role that may only SELECT can open the catalog read-only, and the
// read-only connection refuses writes in the server.
func TestReadOnlyWithSelectOnlyRole(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	openT(t, url).Close()
	reader := pgtest.NewReadOnlyRole(t, url)
	s, err := OpenReadOnly(ctx, reader)
	if err != nil {
		t.Fatalf("OpenReadOnly as a SELECT-only role: %v", err)
	}
	defer s.Close()
	if strings.Contains(s.Path(), "password") && !strings.Contains(s.Path(), "xxxxx") {
		t.Errorf("Path %q shows the password", s.Path())
	}
	if _, err := s.SchemaVersion(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(ctx, reader); err != nil {
		// Open needs no write when the schema is current.
		t.Fatalf("Open as a SELECT-only role on a current catalog: %v", err)
	}
	_, err = s.pool.Exec(ctx, "DELETE FROM "+migrationsTable)
	if err == nil || !strings.Contains(err.Error(), "read-only transaction") {
		t.Fatalf("write on a read-only store: %v, want a read-only transaction error", err)
	}
}
