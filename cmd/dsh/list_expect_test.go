package main

import "testing"

// --expect compares rows as dsh prints them: a golden row with a lone
// surrogate escape keeps it, as JSON.stringify would (issue #11, defect 11),
// from a JSON array and from JSONL alike.
func TestExpectedRowsKeepLoneSurrogates(t *testing.T) {
	for _, text := range []string{
		"[ { \"kind\" : \"child\", \"label\" : \"a\\ud800b\" } ]",
		"{ \"kind\" : \"child\", \"label\" : \"a\\ud800b\" }\n",
	} {
		rows, err := expectedRows([]byte(text))
		if err != nil || len(rows) != 1 || string(rows[0]) != `{"kind":"child","label":"a\ud800b"}` {
			t.Errorf("expectedRows(%s) = %q, %v", text, rows, err)
		}
	}
}
