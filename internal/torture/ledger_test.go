package torture

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/dsh-project/dsh/internal/session"
)

// The crash writer's ledger of acknowledged writes is one line per record,
// "<crc32c of body, 8 hex digits>\t<body>\n", each written by one Write and
// fsynced before the writer goes on. Bodies are
//
//	start\t<seed>                               a writer begins
//	ack\t<id>\t<seq>\t<type>\t<digest>[\t...]   one acknowledged write
//
// A SIGKILL can cut the record being written, never an earlier one; the
// next writer ends such a torn record with a newline before its own start
// record, so that it stays a line of its own. The reader skips exactly that:
// one torn record, only as the last record of a writer (just before the next
// start record, or at the end of the file).

var ledgerCRC = crc32.MakeTable(crc32.Castagnoli)

const (
	ledgerStart = "start"
	ledgerAck   = "ack"
)

// ledgerWriter appends records to the ledger.
type ledgerWriter struct {
	f *os.File
}

// openLedger opens the ledger for appending and records that a writer with
// seed begins, first ending a record torn by the previous writer's kill.
func openLedger(path string, seed uint64) (*ledgerWriter, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	l := &ledgerWriter{f: f}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	prefix := ""
	if fi.Size() > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, fi.Size()-1); err != nil {
			f.Close()
			return nil, err
		}
		if last[0] != '\n' {
			prefix = "\n"
		}
	}
	if err := l.record(prefix, ledgerStart+"\t"+strconv.FormatUint(seed, 10)); err != nil {
		f.Close()
		return nil, err
	}
	return l, nil
}

func (l *ledgerWriter) Close() error { return l.f.Close() }

// acknowledge records the events of one write to session id as one record.
func (l *ledgerWriter) acknowledge(id string, events []session.Event) error {
	if len(events) == 0 {
		return nil
	}
	return l.record("", ackBody(id, events))
}

// record writes one record in a single Write and fsyncs it: only then is
// the write it acknowledges counted, and the next one attempted.
func (l *ledgerWriter) record(prefix, body string) error {
	if _, err := l.f.WriteString(prefix + recordLine(body)); err != nil {
		return err
	}
	return l.f.Sync()
}

func recordLine(body string) string {
	return fmt.Sprintf("%08x\t%s\n", crc32.Checksum([]byte(body), ledgerCRC), body)
}

func ackBody(id string, events []session.Event) string {
	var b strings.Builder
	b.WriteString(ledgerAck)
	for _, e := range events {
		fmt.Fprintf(&b, "\t%s\t%d\t%s\t%s", id, e.Seq, e.Type, digest(e.Data))
	}
	return b.String()
}

// ledgerEntry is one acknowledged event.
type ledgerEntry struct {
	typ, digest string
}

// ledger is what the ledger file says.
type ledger struct {
	acked   map[string]map[int64]ledgerEntry // by session and seq
	events  int                              // acknowledged events
	writers int                              // start records
	torn    int                              // torn records skipped
}

// readLedger reads the ledger at path; a missing file is an empty ledger
// (the writer was killed before it opened it).
func readLedger(path string) (*ledger, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return &ledger{acked: map[string]map[int64]ledgerEntry{}}, nil
	}
	if err != nil {
		return nil, err
	}
	return parseLedger(data)
}

// parseLedger reads every whole record of data and skips the torn ones,
// failing on anything a kill cannot explain: a bad record that is not a
// writer's last, a first record that is not a start, two records
// acknowledging one event differently.
func parseLedger(data []byte) (*ledger, error) {
	l := &ledger{acked: map[string]map[int64]ledgerEntry{}}
	lines := bytes.Split(data, []byte("\n"))
	// What follows the last newline is a record the last kill cut short
	// (or nothing).
	tail := lines[len(lines)-1]
	lines = lines[:len(lines)-1]
	if len(tail) > 0 {
		l.torn++
	}
	for i, line := range lines {
		kind, fields, ok := parseRecord(line)
		switch {
		case !ok:
			// Torn: only a writer's last record, which its successor ended.
			next, _, nextOK := parseRecord(nextLine(lines, i))
			if i+1 >= len(lines) || !nextOK || next != ledgerStart {
				return nil, fmt.Errorf("ledger record %d (%q) is damaged and is not the last of a killed writer", i+1, line)
			}
			l.torn++
		case i == 0 && kind != ledgerStart:
			return nil, fmt.Errorf("ledger record 1 is %q, want a %s record", kind, ledgerStart)
		case kind == ledgerStart:
			l.writers++
		case kind == ledgerAck:
			if err := l.addAck(fields); err != nil {
				return nil, fmt.Errorf("ledger record %d: %w", i+1, err)
			}
		default:
			return nil, fmt.Errorf("ledger record %d: unknown kind %q", i+1, kind)
		}
	}
	return l, nil
}

func nextLine(lines [][]byte, i int) []byte {
	if i+1 < len(lines) {
		return lines[i+1]
	}
	return nil
}

// parseRecord checks a record's checksum and splits its body into its kind
// and fields.
func parseRecord(line []byte) (kind string, fields []string, ok bool) {
	sum, body, found := bytes.Cut(line, []byte("\t"))
	if !found || len(sum) != 8 {
		return "", nil, false
	}
	want, err := strconv.ParseUint(string(sum), 16, 32)
	if err != nil || uint32(want) != crc32.Checksum(body, ledgerCRC) {
		return "", nil, false
	}
	f := strings.Split(string(body), "\t")
	return f[0], f[1:], true
}

func (l *ledger) addAck(fields []string) error {
	if len(fields) == 0 || len(fields)%4 != 0 {
		return fmt.Errorf("ack with %d fields, want 4 per event", len(fields))
	}
	for ; len(fields) > 0; fields = fields[4:] {
		id := fields[0]
		seq, err := strconv.ParseInt(fields[1], 10, 64)
		if err != nil {
			return fmt.Errorf("ack of %q: seq: %w", id, err)
		}
		e := ledgerEntry{typ: fields[2], digest: fields[3]}
		if l.acked[id] == nil {
			l.acked[id] = map[int64]ledgerEntry{}
		}
		prev, dup := l.acked[id][seq]
		if dup && prev != e {
			return fmt.Errorf("seq %d of %q acknowledged twice, as %s %s and %s %s", seq, id, prev.typ, prev.digest, e.typ, e.digest)
		}
		if !dup {
			l.events++
		}
		l.acked[id][seq] = e
	}
	return nil
}

// The ledger keeps every acknowledged write across kills that cut records at
// every byte, skips exactly the torn ones, and refuses damage no kill makes.
func TestLedgerSkipsOneTornRecordPerKill(t *testing.T) {
	path := t.TempDir() + "/ledger"
	ev := func(seq int64) []session.Event {
		return []session.Event{{Type: session.TypeTurnStart, Seq: seq, Data: []byte(`{"turn":1}`)}, {Type: session.TypeTurnEnd, Seq: seq + 1, Data: []byte(`{}`)}}
	}
	// Writer 1 acknowledges seqs 0-1, then is killed inside the record of
	// seqs 2-3, after cut bytes of it.
	w, err := openLedger(path, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.acknowledge("root", ev(0)); err != nil {
		t.Fatal(err)
	}
	w.Close()
	whole, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	torn := []byte(recordLine(ackBody("root", ev(2))))
	for cut := 1; cut < len(torn); cut++ {
		if err := os.WriteFile(path, append(append([]byte{}, whole...), torn[:cut]...), 0o600); err != nil {
			t.Fatal(err)
		}
		l, err := readLedger(path)
		if err != nil {
			t.Fatalf("cut at %d, at the end: %v", cut, err)
		}
		if l.torn != 1 || l.events != 2 || l.writers != 1 {
			t.Fatalf("cut at %d, at the end: %d torn, %d events, %d writers; want 1, 2, 1", cut, l.torn, l.events, l.writers)
		}
		// Writer 2 appends after the torn record, and acknowledges 2-3.
		w, err := openLedger(path, 2)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.acknowledge("root", ev(2)); err != nil {
			t.Fatal(err)
		}
		w.Close()
		l, err = readLedger(path)
		if err != nil {
			t.Fatalf("cut at %d, then a second writer: %v", cut, err)
		}
		// A record cut only of its newline is whole once the next writer
		// ends it: it acknowledges what the store had already committed.
		wantTorn := 1
		if cut == len(torn)-1 {
			wantTorn = 0
		}
		if l.torn != wantTorn || l.events != 4 || l.writers != 2 {
			t.Fatalf("cut at %d, then a second writer: %d torn, %d events, %d writers; want %d, 4, 2", cut, l.torn, l.events, l.writers, wantTorn)
		}
		for seq := range int64(4) {
			if _, ok := l.acked["root"][seq]; !ok {
				t.Fatalf("cut at %d: seq %d not acknowledged", cut, seq)
			}
		}
	}

	// Damage no kill explains is an error: a bad record inside a writer's
	// run, a missing start record, one event acknowledged twice differently.
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(good, []byte("\n"))
	flipped := bytes.Join([][]byte{lines[0], []byte("0000000a\tack\n"), bytes.Join(lines[1:], nil)}, nil)
	conflicting := append(append([]byte{}, good...), recordLine(ackBody("root", []session.Event{{Type: session.TypeTurnStart, Seq: 0, Data: []byte(`{"turn":9}`)}}))...)
	for name, data := range map[string][]byte{
		"damaged mid-run":    flipped,
		"no start":           bytes.Join(lines[1:], nil),
		"acknowledged twice": conflicting,
	} {
		if _, err := parseLedger(data); err == nil {
			t.Errorf("%s: the ledger was accepted", name)
		}
	}
}
