package logdamage

import "testing"

// TestOf: a refused log is unreadable whatever else is known of it, and
// damage inside the committed region outranks a torn tail after it.
func TestOf(t *testing.T) {
	for _, c := range []struct {
		refused               bool
		damagedFrom, tornFrom int64
		kind                  Kind
		from                  int64
	}{
		{false, -1, -1, "", -1},
		{false, -1, 4, Torn, 4},
		{false, 2, -1, Damaged, 2},
		{false, 2, 4, Damaged, 2},
		{true, 2, 4, Unreadable, -1},
		{true, -1, -1, Unreadable, -1},
		{false, 0, -1, Damaged, 0},
		{false, -1, 0, Torn, 0},
	} {
		if k, from := Of(c.refused, c.damagedFrom, c.tornFrom); k != c.kind || from != c.from {
			t.Errorf("Of(%v, %d, %d) = %q, %d; want %q, %d", c.refused, c.damagedFrom, c.tornFrom, k, from, c.kind, c.from)
		}
	}
}
