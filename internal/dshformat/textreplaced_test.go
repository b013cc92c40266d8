package dshformat

import (
	"bytes"
	"database/sql"
	"strings"
	"testing"

	"github.com/dsh-project/dsh/internal/backend"
)

// The JSONL reader notes the events it read from lines that are not UTF-8:
// from the first such event on, every event of a packed row counted, a
// torn tail's bytes (kept as found) not counted.
func TestJSONLReaderNotesReplacedText(t *testing.T) {
	row := strings.Replace(textRow(1, 3), `"x"`, "\"x\xff\"", 1)
	lines := []string{title(0), row, strings.Replace(title(4), `"t"`, "\"t\xc3\"", 1), turnStart(5), turnEnd(6)}
	s, err := readPlain(t, plainLog(lines, "{\"type\":\"session/title\",\"seq\":7,\"ti\xff"))
	if err != nil {
		t.Fatal(err)
	}
	if want := (backend.TextReplaced{FirstSeq: 1, Events: 4}); s.TextReplaced == nil || *s.TextReplaced != want {
		t.Errorf("TextReplaced %+v, want %+v", s.TextReplaced, want)
	}
	if s.Torn == nil || !bytes.Contains(s.Torn.Raw, []byte("\xff")) {
		t.Errorf("torn tail %+v: its bytes are kept as found", s.Torn)
	}
	if d := s.Events[4].Data; !bytes.Contains(d, []byte("t\uFFFD")) {
		t.Errorf("seq 4 data %q: the ill-formed byte reads as U+FFFD", d)
	}
	clean, err := readPlain(t, plainLog([]string{title(0), textRow(1, 3), "{\"type\":\"session/title\",\"seq\":4,\"time\":5,\"data\":{\"title\":\"t\uFFFD\"}}"}, ""))
	if err != nil {
		t.Fatal(err)
	}
	if clean.TextReplaced != nil {
		t.Errorf("a log that is UTF-8 (U+FFFD included) notes %+v", clean.TextReplaced)
	}
}

// A schema-17 row is noted when its TEXT data or surface_op is not UTF-8
// (a zstd BLOB that is not UTF-8 is refused instead: sqlite_test.go).
func TestSQLiteRowNotesReplacedText(t *testing.T) {
	op := sql.NullString{Valid: true, String: `{"op":"append"}`}
	for _, c := range []struct {
		name string
		row  physicalRow
		want bool
	}{
		{"clean", physicalRow{typ: "session/title", data: `{"title":"t"}`}, false},
		{"data", physicalRow{typ: "session/title", data: "{\"title\":\"t\xff\"}"}, true},
		{"surface_op", physicalRow{typ: "session/title", data: `{"title":"t"}`, surfaceOp: sql.NullString{Valid: true, String: "{\"op\":\"append\",\"x\":\"\xfe\"}"}}, true},
		{"clean surface_op", physicalRow{typ: "session/title", data: `{"title":"t"}`, surfaceOp: op}, false},
		{"packed row", physicalRow{typ: "text-chunks", data: "{\"turn\":1,\"step\":1,\"index\":0,\"dt\":[0,0],\"texts\":[\"a\xff\",\"b\",\"c\"]}", ignorable: sql.NullInt64{Valid: true}}, true},
	} {
		d := decodeRow(c.row, maxLogText)
		if d.err != nil || d.replaced != c.want {
			t.Errorf("%s: replaced %v (err %v), want %v", c.name, d.replaced, d.err, c.want)
		}
	}
}
