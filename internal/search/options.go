package search

import (
	"fmt"
	"strings"
	"time"

	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/subagent"
)

// The options of a search come from dsh search's flags and from dsh
// serve's query parameters; each check below names the option as its
// caller spells it (--since, since), the message otherwise the same.

// CheckTypes refuses a type that is not one of Types.
func CheckTypes(name string, types []string) error {
	for _, t := range types {
		if !IsType(t) {
			return dsherr.New(dsherr.Usage, "%s: %q is not one of %s", name, t, strings.Join(Types, ", "))
		}
	}
	return nil
}

// ParseTime reads a time bound: RFC 3339, a date (midnight UTC) or a
// duration before now; nil when value is empty.
func ParseTime(name, value string, now time.Time) (*int64, error) {
	if value == "" {
		return nil, nil
	}
	at := func(t time.Time) (*int64, error) {
		ms := t.UnixMilli()
		return &ms, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, value); err == nil {
		return at(t)
	}
	if t, err := time.Parse("2006-01-02", value); err == nil {
		return at(t)
	}
	d := strings.TrimSuffix(value, "d")
	if d != value {
		var days int
		if _, err := fmt.Sscanf(d, "%d", &days); err == nil && fmt.Sprint(days) == d && days >= 0 {
			return at(now.Add(-time.Duration(days) * 24 * time.Hour))
		}
	} else if dur, err := time.ParseDuration(value); err == nil && dur >= 0 {
		return at(now.Add(-dur))
	}
	return nil, dsherr.New(dsherr.Usage, "%s: %q is not an RFC 3339 time, a date (YYYY-MM-DD) or a duration ago (90m, 36h, 7d)", name, value)
}

// Subtree is what a search of parent's subtree reads (Options.Sessions):
// parent, the sessions its descendants listing's rows name and, unless
// childrenOnly (parent and its direct children), the parents of those rows
// (a session the listing walked through without a row of its own, an
// ordinary fork between two listed children).
func Subtree(parent string, rows []subagent.Row, childrenOnly bool) []string {
	ids := []string{parent}
	for _, row := range rows {
		if childrenOnly && row.Depth > 1 {
			continue
		}
		ids = append(ids, row.ID)
		if !childrenOnly && row.ParentID != "" {
			ids = append(ids, row.ParentID)
		}
	}
	return ids
}
