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

// IsConnString reports whether a --db value names a PostgreSQL database: a
// URL (IsURL) or a libpq keyword/value string ("host=db user=alice
// dbname=dsh"), which pgx parses as libpq does. A keyword/value string must
// begin with one of libpq's connection keywords, so a file name holding an
// '=' stays a SQLite path.
func IsConnString(db string) bool {
	if IsURL(db) {
		return true
	}
	m := firstKeyword.FindStringSubmatch(db)
	return m != nil && libpqKeywords[m[1]]
}

// firstKeyword matches the start of a keyword/value string.
var firstKeyword = regexp.MustCompile(`^\s*([a-z_]+)\s*=`)

// libpqKeywords are libpq's connection parameter keywords.
var libpqKeywords = map[string]bool{
	"host": true, "hostaddr": true, "port": true, "dbname": true, "user": true, "password": true,
	"passfile": true, "channel_binding": true, "connect_timeout": true, "client_encoding": true,
	"options": true, "application_name": true, "fallback_application_name": true, "keepalives": true,
	"keepalives_idle": true, "keepalives_interval": true, "keepalives_count": true, "tcp_user_timeout": true,
	"replication": true, "gssencmode": true, "sslmode": true, "requiressl": true, "sslnegotiation": true,
	"sslcompression": true, "sslcert": true, "sslkey": true, "sslpassword": true, "sslcertmode": true,
	"sslrootcert": true, "sslcrl": true, "sslcrldir": true, "sslsni": true, "requirepeer": true,
	"ssl_min_protocol_version": true, "ssl_max_protocol_version": true, "krbsrvname": true,
	"gsslib": true, "gssdelegation": true, "service": true, "target_session_attrs": true,
	"load_balance_hosts": true,
}

// keywordPassword matches a password in a keyword/value string: its value
// plain, or single-quoted with backslash escapes (unterminated: to the end).
var keywordPassword = regexp.MustCompile(`((?:^|\s)(?:ssl)?password\s*=\s*)('(?:[^'\\]|\\.)*'?|[^\s']\S*|)`)

// keywordSecrets returns the passwords a keyword/value string holds, as
// libpq reads them (quotes and escapes removed).
func keywordSecrets(db string) []string {
	var out []string
	for _, m := range keywordPassword.FindAllStringSubmatch(db, -1) {
		v := m[2]
		if strings.HasPrefix(v, "'") {
			v = strings.TrimSuffix(strings.TrimPrefix(v, "'"), "'")
			v = strings.NewReplacer(`\'`, "'", `\\`, `\`).Replace(v)
		}
		if v != "" {
			out = append(out, v)
		}
	}
	return out
}

// redactedPassword replaces a password wherever dsh prints a URL.
const redactedPassword = "xxxxx"

// passwordParam matches a password given as a URL query parameter.
var passwordParam = regexp.MustCompile(`(?i)([?&](?:ssl)?password=)[^&#]*`)

// userinfoPassword matches user:password@ in a URL that net/url cannot
// parse, so that even a malformed URL is printed without its password.
var userinfoPassword = regexp.MustCompile(`^([^:/?#]+://[^:/?#@]*):[^@/?#]*@`)

// Redact returns db with any password replaced by "xxxxx": the form of a
// database URL or keyword/value string that dsh prints (config, errors,
// logs). A SQLite path is returned unchanged.
func Redact(db string) string {
	if !IsURL(db) {
		if IsConnString(db) {
			return keywordPassword.ReplaceAllString(db, "${1}"+redactedPassword)
		}
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
