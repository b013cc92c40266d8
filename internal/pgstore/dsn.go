package pgstore

import (
	"net/url"
	"regexp"
	"strings"
)

// IsURL reports whether a --db value names a PostgreSQL database (a
// postgres: or postgresql: URL) rather than a SQLite file path.
func IsURL(db string) bool {
	scheme, _, ok := strings.Cut(db, ":")
	if !ok {
		return false
	}
	scheme = strings.ToLower(scheme)
	return scheme == "postgres" || scheme == "postgresql"
}

// redactedPassword replaces a password wherever dsh prints a URL.
const redactedPassword = "xxxxx"

// passwordParam matches a password given as a URL query parameter.
var passwordParam = regexp.MustCompile(`(?i)([?&](?:ssl)?password=)[^&#]*`)

// userinfoPassword matches user:password@ in a URL that net/url cannot
// parse, so that even a malformed URL is printed without its password.
var userinfoPassword = regexp.MustCompile(`^([^:/?#]+://[^:/?#@]*):[^@/?#]*@`)

// Redact returns db with any password replaced by "xxxxx": the form of a
// database URL that dsh prints (config, errors, logs). A SQLite path is
// returned unchanged.
func Redact(db string) string {
	if !IsURL(db) {
		return db
	}
	if u, err := url.Parse(db); err == nil {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), redactedPassword)
		}
		s := u.String()
		return passwordParam.ReplaceAllString(s, "${1}"+redactedPassword)
	}
	s := userinfoPassword.ReplaceAllString(db, "${1}:"+redactedPassword+"@")
	return passwordParam.ReplaceAllString(s, "${1}"+redactedPassword)
}
