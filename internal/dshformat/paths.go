package dshformat

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf16"
)

// DSH's JSONL store lays sessions out as <root>/<ProjectKey(cwd)>/<EncodeSegment(id)>/session.jsonl[.zstd]
// (storage-formats §2.1). Both functions work on UTF-16 code units, as DSH's
// JavaScript does; Go strings are converted first (invalid UTF-8 becomes
// U+FFFD).

// noCwdDir is the project directory of sessions without a cwd.
const noCwdDir = "_no-cwd"

// isProjectDir reports whether name is a project directory of DSH's
// layout: ProjectKey's --slug--, or noCwdDir.
func isProjectDir(name string) bool {
	return name == noCwdDir || len(name) >= 4 && strings.HasPrefix(name, "--") && strings.HasSuffix(name, "--")
}

func isSegmentSafe(u uint16) bool {
	return u >= 'A' && u <= 'Z' || u >= 'a' && u <= 'z' || u >= '0' && u <= '9' || u == '.' || u == '_' || u == '-'
}

func appendUnitEscape(b *strings.Builder, u uint16) {
	fmt.Fprintf(b, "~%04X", u)
}

// EncodeSegment maps a session id to its directory name, injectively:
// A-Z a-z 0-9 . _ - are kept, every other UTF-16 code unit becomes ~XXXX
// (upper-case hex), and "." and ".." are escaped whole.
func EncodeSegment(id string) (string, error) {
	switch id {
	case "":
		return "", errors.New("session id is empty and cannot name a storage path")
	case ".":
		return "~002E", nil
	case "..":
		return "~002E~002E", nil
	}
	var b strings.Builder
	for _, u := range utf16.Encode([]rune(id)) {
		if isSegmentSafe(u) {
			b.WriteByte(byte(u))
		} else {
			appendUnitEscape(&b, u)
		}
	}
	return b.String(), nil
}

// ProjectKey maps a cwd to its project directory name (lossy but readable):
// runs of / \ : become one "-", safe characters are kept, others become
// ~XXXX; leading "-" are stripped, an empty result becomes "root", the slug
// is cut to 251 code units and wrapped as --slug--.
func ProjectKey(cwd string) (string, error) {
	if cwd == "" {
		return "", errors.New("cwd is empty and cannot name a project directory")
	}
	var b strings.Builder
	inSeparators := false
	for _, u := range utf16.Encode([]rune(cwd)) {
		if u == '/' || u == '\\' || u == ':' {
			if !inSeparators {
				b.WriteByte('-')
			}
			inSeparators = true
			continue
		}
		inSeparators = false
		if isSegmentSafe(u) {
			b.WriteByte(byte(u))
		} else {
			appendUnitEscape(&b, u)
		}
	}
	slug := strings.TrimLeft(b.String(), "-")
	if slug == "" {
		slug = "root"
	}
	const maxSlug = 251
	if len(slug) > maxSlug { // the slug is ASCII: one byte per code unit
		slug = slug[:maxSlug]
	}
	return "--" + slug + "--", nil
}

// projectDir returns the project directory name of a session's cwd.
func projectDir(cwd *string) (string, error) {
	if cwd == nil {
		return noCwdDir, nil
	}
	return ProjectKey(*cwd)
}
