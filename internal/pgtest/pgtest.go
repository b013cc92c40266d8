// Package pgtest gives tests a PostgreSQL database of their own on the
// server named by DSH_TEST_POSTGRES (default: the development server on
// 127.0.0.1:5432), created for the test and dropped after it, so runs never
// see each other's data.
//
// Without a reachable server the test is skipped with one line saying so,
// unless DSH_TEST_POSTGRES is set or CI=true: then it fails, because the
// PostgreSQL backend would otherwise go untested unnoticed.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvURL names the variable holding the admin URL of the test server: a
// role that may create databases and roles, connected to any database.
const EnvURL = "DSH_TEST_POSTGRES"

// DefaultURL is the development and CI machines' server.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

var probe struct {
	once sync.Once
	url  string
	err  error
}

// AdminURL returns the test server's admin URL, skipping or failing t when
// no server answers (see the package comment).
func AdminURL(t testing.TB) string {
	t.Helper()
	url, err := Probe()
	if err != nil {
		if Required() {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	return url
}

// Required reports whether a missing server fails the tests instead of
// skipping them: DSH_TEST_POSTGRES is set, or CI=true.
func Required() bool {
	return os.Getenv(EnvURL) != "" || os.Getenv("CI") == "true"
}

// Probe returns the test server's admin URL once it has answered, or an
// error saying that no server answered and how to name one.
func Probe() (string, error) {
	probe.once.Do(func() {
		probe.url = os.Getenv(EnvURL)
		if probe.url == "" {
			probe.url = DefaultURL
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, probe.url)
		if err != nil {
			probe.err = err
			return
		}
		probe.err = conn.Ping(ctx)
		conn.Close(ctx)
	})
	if probe.err != nil {
		return "", fmt.Errorf("PostgreSQL tests: no server at %s (%v); set %s to a server's admin URL", redact(probe.url), probe.err, EnvURL)
	}
	return probe.url, nil
}

// NewDatabase creates an empty UTF8 database for t and drops it when t
// ends; it returns the database's URL (the admin URL with its name).
func NewDatabase(t testing.TB) string {
	t.Helper()
	url, drop, err := CreateDatabase(context.Background(), AdminURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := drop(); err != nil {
			t.Error(err)
		}
	})
	return url
}

// CreateDatabase creates an empty UTF8 database on the server at admin and
// returns its URL and the function that drops it, for callers without a
// testing.TB (a testscript Setup).
func CreateDatabase(ctx context.Context, admin string) (url string, drop func() error, err error) {
	name := "dsh_test_" + randomHex(6)
	if err := execSQL(ctx, admin, fmt.Sprintf("CREATE DATABASE %s TEMPLATE template0 ENCODING 'UTF8'", name)); err != nil {
		return "", nil, err
	}
	drop = func() error {
		return execSQL(context.Background(), admin, fmt.Sprintf("DROP DATABASE IF EXISTS %s WITH (FORCE)", name))
	}
	url, err = withDatabase(admin, name)
	if err != nil {
		drop()
		return "", nil, err
	}
	return url, drop, nil
}

// WithDatabase returns rawURL pointing at database name instead.
func WithDatabase(t testing.TB, rawURL, name string) string {
	t.Helper()
	u, err := withDatabase(rawURL, name)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func withDatabase(rawURL, name string) (string, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", fmt.Errorf("%s: %v", EnvURL, err)
	}
	u.Path = "/" + name
	return u.String(), nil
}

// NewReadOnlyRole creates a login role that may connect to the database at
// dbURL and SELECT from the tables that exist there now, nothing else; it
// returns dbURL with that role as the user. The role is dropped when t
// ends. Its password is password, for servers that ask for one.
func NewReadOnlyRole(t testing.TB, dbURL string) string {
	t.Helper()
	admin := AdminURL(t)
	role := "dsh_reader_" + randomHex(6)
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	db := u.Path[1:]
	exec(t, admin, fmt.Sprintf("CREATE ROLE %s LOGIN PASSWORD 'password' NOSUPERUSER NOCREATEDB NOCREATEROLE", role))
	exec(t, dbURL, fmt.Sprintf(`GRANT CONNECT ON DATABASE %s TO %s;
		GRANT USAGE ON SCHEMA public TO %s;
		GRANT SELECT ON ALL TABLES IN SCHEMA public TO %s`, db, role, role, role))
	t.Cleanup(func() {
		exec(t, dbURL, "DROP OWNED BY "+role)
		exec(t, admin, "DROP ROLE "+role)
	})
	u.User = url.UserPassword(role, "password")
	return u.String()
}

// Exec runs sql (one or more statements) on the database at rawURL.
func Exec(t testing.TB, rawURL, sql string) {
	t.Helper()
	exec(t, rawURL, sql)
}

func exec(t testing.TB, rawURL, sql string) {
	t.Helper()
	if err := execSQL(context.Background(), rawURL, sql); err != nil {
		t.Fatal(err)
	}
}

func execSQL(ctx context.Context, rawURL, sql string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, rawURL)
	if err != nil {
		return fmt.Errorf("connect to %s: %v", redact(rawURL), err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		return fmt.Errorf("%s: %v", sql, err)
	}
	return nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}
