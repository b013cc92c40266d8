// Package dshcompat names whose rules dsh follows when it lists and audits
// subagent children: the DSH releases dsh can imitate, one profile each.
//
// A profile is chosen once per command (--dsh-compat, config dshCompat, env
// DSH_COMPAT) and handed to the listing and the audit, which branch on it.
// docs/dsh-compatibility.md tables what each profile does, rule by rule.
package dshcompat

import (
	"strings"

	"github.com/dsh-project/dsh/internal/dsherr"
)

// Profile is one set of DSH's listing rules.
type Profile string

// The profiles dsh knows.
const (
	// Seeds is the default and dsh's historical behaviour: DSH 0.1.0-rc.8's
	// corpus enumeration and four-state rows, with the later design
	// revision's changes and descriptor version 3 read as valid.
	Seeds Profile = "seeds"
	// RC8 is DSH release 0.1.0-rc.8 exactly: descriptor version 2 only,
	// none of the later revision's changes.
	RC8 Profile = "0.1.0-rc.8"
	// V017 is DSH 0.1.7 and later: a parent's own subagent/catalog facts
	// decide its children (catalog order, five outcomes, no enumeration).
	V017 Profile = "0.1.7"
)

// Default is the profile used when none is chosen.
const Default = Seeds

// All lists every profile, the default first; completion, `dsh version`
// and error messages show them in this order.
func All() []Profile { return []Profile{Seeds, RC8, V017} }

// Names is All as strings.
func Names() []string {
	all := All()
	names := make([]string, len(all))
	for i, p := range all {
		names[i] = string(p)
	}
	return names
}

// Parse reads a profile name as written on the command line, in the
// environment or in the config file. The names are exact (no case folding:
// they are DSH version strings); anything else is INVALID_INPUT naming the
// valid values.
func Parse(s string) (Profile, error) {
	for _, p := range All() {
		if s == string(p) {
			return p, nil
		}
	}
	return "", dsherr.New(dsherr.InvalidInput, "%q is not a DSH compatibility profile (want one of %s)", s, strings.Join(Names(), ", "))
}

// String is the profile's name.
func (p Profile) String() string { return string(p) }

// Valid reports whether p is one of the known profiles.
func (p Profile) Valid() bool {
	_, err := Parse(string(p))
	return err == nil
}

// Or returns p, or Default when p is the zero value: the zero Profile in an
// options struct means "not chosen", not an invalid choice.
func (p Profile) Or() Profile {
	if p == "" {
		return Default
	}
	return p
}

// CatalogAuthority reports whether a parent's children are decided by the
// parent's own subagent/catalog facts (DSH 0.1.7 and later) rather than by
// enumerating the corpus (rc.8's rules, which seeds and 0.1.0-rc.8 follow).
func (p Profile) CatalogAuthority() bool { return p.Or() == V017 }
