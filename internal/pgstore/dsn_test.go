package pgstore

import (
	"strings"
	"testing"
)

func TestIsURL(t *testing.T) {
	for db, want := range map[string]bool{
		"postgres://u@h/db":      true,
		"postgresql://u@h/db":    true,
		"POSTGRES://h/db":        true,
		"postgres:///db":         true,
		"/var/lib/dsh/dsh.db":    false,
		"./postgres.db":          false,
		"postgres":               false,
		"sqlite:///x.db":         false,
		"C:/dsh/postgres://x.db": false,
		"postgresx://u@h/db":     false,
		"relative/postgres:x.db": false,
		"":                       false,
	} {
		if got := IsURL(db); got != want {
			t.Errorf("IsURL(%q) = %v, want %v", db, got, want)
		}
	}
}

// libpq's keyword/value form names a PostgreSQL database too; a path that
// merely holds an '=' does not.
func TestIsConnString(t *testing.T) {
	for db, want := range map[string]bool{
		"postgres://u@h/db": true,
		"host=db.example user=alice password=S dbname=dsh": true,
		"  dbname = dsh":      true,
		"user=alice":          true,
		"service=dsh":         true,
		"HOST=db":             false, // libpq keywords are lower case
		"/var/lib/dsh/x=y.db": false,
		"mode=rw.db":          false,
		"a=b c=d":             false,
		"host":                false,
		"":                    false,
		"host=db.example password='it''s' dbname=dsh extra": true,
	} {
		if got := IsConnString(db); got != want {
			t.Errorf("IsConnString(%q) = %v, want %v", db, got, want)
		}
	}
}

func TestRedactHidesEveryPassword(t *testing.T) {
	cases := map[string]string{
		"postgres://alice:s3cret@db.example:5432/dsh?sslmode=require":     "postgres://alice:xxxxx@db.example:5432/dsh?sslmode=require",
		"postgres://alice@db.example/dsh?password=s3cret&sslmode=disable": "postgres://alice@db.example/dsh?password=xxxxx&sslmode=disable",
		"postgresql://alice:s3cret@h/dsh?sslpassword=s3cret":              "postgresql://alice:xxxxx@h/dsh?sslpassword=xxxxx",
		"postgres://alice@h/dsh":                                          "postgres://alice@h/dsh",
		"/home/alice/s3cret.db":                                           "/home/alice/s3cret.db",
		// net/url refuses this one (bad port); the password still goes.
		"postgres://alice:s3cret@h:notaport/dsh": "postgres://alice:xxxxx@h:notaport/dsh",
		// libpq keyword/value strings: plain, quoted, spaced, sslpassword.
		"host=db.example user=alice password=s3cret dbname=dsh":         "host=db.example user=alice password=xxxxx dbname=dsh",
		"host=db password='s3cret with \\' quote' dbname=dsh":           "host=db password=xxxxx dbname=dsh",
		"host=db password = s3cret sslpassword=s3cret2 sslmode=require": "host=db password = xxxxx sslpassword=xxxxx sslmode=require",
	}
	for in, want := range cases {
		got := Redact(in)
		if got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
		if (strings.Contains(in, "postgres") || strings.Contains(in, "host=")) && strings.Contains(got, "s3cret") {
			t.Errorf("Redact(%q) kept the password: %q", in, got)
		}
	}
}
