package dshcompat

import (
	"errors"
	"strings"
	"testing"

	"github.com/dsh-project/dsh/internal/dsherr"
)

func TestParseKnown(t *testing.T) {
	for _, name := range []string{"seeds", "0.1.0-rc.8", "0.1.7"} {
		p, err := Parse(name)
		if err != nil {
			t.Fatalf("Parse(%q): %v", name, err)
		}
		if p.String() != name || !p.Valid() {
			t.Errorf("Parse(%q) = %q (valid %v)", name, p, p.Valid())
		}
	}
}

func TestParseRejects(t *testing.T) {
	for _, name := range []string{"", "Seeds", "0.1.0-rc8", "rc.8", "0.1.7 ", "0.2.1", "seeds\n"} {
		_, err := Parse(name)
		var de *dsherr.Error
		if !errors.As(err, &de) || de.Code != dsherr.InvalidInput {
			t.Fatalf("Parse(%q) = %v, want INVALID_INPUT", name, err)
		}
		msg := err.Error()
		if strings.Contains(msg, "\n") {
			t.Errorf("Parse(%q): message spans lines: %q", name, msg)
		}
		for _, v := range Names() {
			if !strings.Contains(msg, v) {
				t.Errorf("Parse(%q): message %q does not name %q", name, msg, v)
			}
		}
	}
}

func TestDefaultAndAuthority(t *testing.T) {
	if All()[0] != Default || Default != Seeds {
		t.Fatalf("default %q is not listed first: %v", Default, All())
	}
	var zero Profile
	if zero.Or() != Seeds || zero.CatalogAuthority() {
		t.Errorf("zero profile = %q, catalog authority %v", zero.Or(), zero.CatalogAuthority())
	}
	for p, want := range map[Profile]bool{Seeds: false, RC8: false, V017: true} {
		if p.CatalogAuthority() != want {
			t.Errorf("%s.CatalogAuthority() = %v", p, !want)
		}
	}
	if Profile("bogus").Valid() {
		t.Error("an unknown name is valid")
	}
}
