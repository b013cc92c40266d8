package jsjson

import "testing"

func TestValueEndFindsTheEndOfEachValue(t *testing.T) {
	for _, c := range []struct {
		text string
		at   int
		want int
	}{
		{`"a\"b",1`, 0, 6},
		{`{"k":"}","n":[1,{"x":"]"}]} tail`, 0, 27},
		{`[1, [2], "]"]`, 0, 13},
		{`-1.5e3, 2`, 0, 6},
		{`true}`, 0, 4},
		{`{"open": "never closed`, 0, 22},
		{`[1, 2`, 0, 5},
		{`x`, 1, 1},
	} {
		if got := ValueEnd([]byte(c.text), c.at); got != c.want {
			t.Errorf("ValueEnd(%q, %d) = %d, want %d", c.text, c.at, got, c.want)
		}
	}
}

func TestSkipSpaceAndStringEnd(t *testing.T) {
	if got := SkipSpace([]byte(" \t\r\n x"), 0); got != 5 {
		t.Errorf("SkipSpace = %d, want 5", got)
	}
	if got := SkipSpace([]byte("   "), 1); got != 3 {
		t.Errorf("SkipSpace at the end = %d, want 3", got)
	}
	if got := StringEnd([]byte(`"\\" x`), 0); got != 4 {
		t.Errorf("StringEnd of an escaped backslash = %d, want 4", got)
	}
	if got := StringEnd([]byte(`"abc`), 0); got != 4 {
		t.Errorf("StringEnd of an unclosed string = %d, want 4", got)
	}
}
