package dshformat

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/dsh-project/dsh/internal/session"
)

// checkDamage asserts that Read refuses what ReadAsFound returns with its
// damage: the same error, the events before the damage, the rest as found.
func checkDamage(t *testing.T, src Source, id string, events int, enc RawEncoding, raw, reason string) {
	t.Helper()
	ctx := context.Background()
	_, readErr := src.Read(ctx, id)
	if !errors.Is(readErr, ErrCorrupt) {
		t.Fatalf("Read: %v, want corruption", readErr)
	}
	s, err := src.ReadAsFound(ctx, id)
	if err != nil {
		t.Fatalf("ReadAsFound: %v", err)
	}
	d := s.Damage
	if d == nil {
		t.Fatalf("ReadAsFound: no damage, %d events", len(s.Events))
	}
	if d.Err.Error() != readErr.Error() || !strings.Contains(d.Err.Error(), reason) {
		t.Errorf("damage error %q, Read's %q, want one containing %q", d.Err, readErr, reason)
	}
	if len(s.Events) != events || d.FromSeq != int64(events) || s.Torn != nil || s.Header.ID != id {
		t.Errorf("events %d (from seq %d), torn %v, header %q; want %d events", len(s.Events), d.FromSeq, s.Torn, s.Header.ID, events)
	}
	if d.Encoding != enc || (raw != "" && string(d.Raw) != raw) || len(d.Raw) == 0 {
		t.Errorf("raw %s %q, want %s %q", d.Encoding, d.Raw, enc, raw)
	}
}

// Damage inside the committed region of a JSONL log is kept: the valid
// prefix and the text from the damaged line on, whatever the damage.
func TestReadAsFoundKeepsCommittedJSONLDamage(t *testing.T) {
	tail := turnStart(3) + "\n" + turnEnd(4) + "\n"
	for _, c := range []struct {
		name, bad, reason string
	}{
		{"unparsable line", "{not json}", "unparsable committed event at line 3"},
		{"seq gap", title(7), "seq gap in committed region at line 3 (expected 2, got 7)"},
		{"duplicate seq", title(1), "expected 2, got 1"},
		{"invalid envelope", `{"type":"session/title","seq":2,"time":"x","data":{}}`, "invalid event envelope"},
	} {
		t.Run(c.name, func(t *testing.T) {
			content := plainLog([]string{turnStart(0), title(1), c.bad}, tail)
			src := openJSONL(t, writeFile(t, t.TempDir(), "s/session.jsonl", content))
			checkDamage(t, src, "s", 2, RawJSONLText, c.bad+"\n"+tail, c.reason)
		})
	}
	t.Run("zstd bad checksum", func(t *testing.T) {
		events := frameOf(t, turnStart(0)+"\n"+turnEnd(1)+"\n")
		events[len(events)-1] ^= 0xff
		later := frameOf(t, title(2)+"\n")
		src := openJSONL(t, writeFile(t, t.TempDir(), "s/session.jsonl.zstd", cat(frameOf(t, testHeaderLine+"\n"), events, later)))
		checkDamage(t, src, "s", 0, RawZstdFrames, string(cat(events, later)), "failed validation")
	})
	t.Run("zstd unparsable line in a complete frame", func(t *testing.T) {
		src := openJSONL(t, writeFile(t, t.TempDir(), "s/session.jsonl.zstd",
			cat(frameOf(t, testHeaderLine+"\n"), frameOf(t, turnStart(0)+"\ngarbage\n"))))
		checkDamage(t, src, "s", 1, RawJSONLText, "garbage\n", "complete frame contains a torn JSONL record")
	})
}

// A schema-17 row that cannot be read before a later turn/end, or one that
// fails DSH's primitive checks anywhere, is kept with the rows after it.
func TestReadAsFoundKeepsCommittedSQLiteDamage(t *testing.T) {
	for _, c := range []struct {
		name, reason string
		row          rawRow
		turnEndAfter bool
	}{
		{"data not JSON", "invalid committed physical row at seq 1", rawRow{typ: "session/title", data: `{broken`}, true},
		{"packed row with a bad length", "invalid committed physical row at seq 1", rawRow{typ: "text-chunks", data: `{"turn":1,"step":1,"index":0,"dt":[0],"texts":["a","b","c"]}`, ignorable: 0}, true},
		{"data not TEXT or BLOB, last", "data is integer", rawRow{typ: "session/title", data: 7}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newStore17(t)
			s.addSession(testHeader)
			s.appendBatch(testHeader.ID, []session.Event{event(0, "turn/start", `{"turn":1}`)})
			c.row.seq, c.row.time = 1, 7
			s.insert(testHeader.ID, c.row)
			if c.turnEndAfter {
				s.appendBatch(testHeader.ID, []session.Event{event(2, "turn/end", `{"turn":1,"reason":{"kind":"completed"}}`)})
			}
			checkDamage(t, openSQLite(t, s.path), testHeader.ID, 1, RawSQLiteRows, "", c.reason)
		})
	}
}
