package dshformat

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/dsh-project/dsh/internal/session"
)

// FuzzLaterHeader decodes arbitrary header lines: no panic; a header read
// as a later format writes back (MarshalJSONL) to a line that decodes to
// the same header; a refused one names its version.
func FuzzLaterHeader(f *testing.F) {
	f.Add([]byte(v4Header))
	f.Add([]byte(v4SeedHeader))
	f.Add([]byte(`{"type":"session","version":3,"id":"x","createdAt":1,"isSeeded":"yes","delegationDepth":0}`))
	f.Add([]byte(`{"type":"session","version":5,"id":"x","createdAt":1,"isSeeded":false,"delegationDepth":0,"extra":1}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		h, listable, err := decodeHeader(line)
		var refusal *UnsupportedVersionError
		if errors.As(err, &refusal) {
			if refusal.Version == "" {
				t.Fatalf("refusal without a version: %v", err)
			}
			return
		}
		if err != nil || !listable || !session.IsLaterFormat(h.Version) {
			return
		}
		back, _, err := decodeHeader(h.MarshalJSONL())
		if err != nil || back.Witness() != h.Witness() || back.IsSeeded() != h.IsSeeded() {
			t.Fatalf("%s wrote back as %s: %+v %v", line, h.MarshalJSONL(), back, err)
		}
	})
}

// FuzzLaterLog reads arbitrary bodies under a format-4 header, plain and
// as a zstd frame sequence: no panic; the events are contiguous from 0,
// never more than the lines given, and never packed-row expansions; the
// cut of a seeded header is a tagged marker's seq or past the end;
// validation never panics.
func FuzzLaterLog(f *testing.F) {
	f.Add([]byte(`{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}`+"\n"), true)
	f.Add([]byte(`{"type":"text-chunks","seq":0,"time":1,"data":{}}`+"\n"+`{"type":"session/end-seed","seq":1,"time":1,"data":{"inherited":true}}`+"\n"), false)
	f.Fuzz(func(t *testing.T, body []byte, seeded bool) {
		header := v4Header
		if seeded {
			header = v4SeedHeader
		}
		dir := t.TempDir()
		log := append([]byte(header+"\n"), body...)
		writeFile(t, dir, "p/c/session.v4.jsonl", log)
		writeFile(t, dir, "q/c2/session.v4.jsonl.zstd", zstdFrames(t, append(bytes.Replace([]byte(header), []byte(`"id":"c"`), []byte(`"id":"c2"`), 1), '\n'), body))
		src, err := OpenJSONL(context.Background(), dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{"c", "c2"} {
			s, err := src.Read(context.Background(), id)
			if err != nil {
				continue
			}
			lines := bytes.Count(body, []byte("\n")) + 1
			if len(s.Events) > lines {
				t.Fatalf("%d events from %d lines", len(s.Events), lines)
			}
			for i, e := range s.Events {
				if e.Seq != int64(i) {
					t.Fatalf("event %d has seq %d", i, e.Seq)
				}
			}
			if cut := s.Header.InheritedCut(); s.Header.IsSeeded() && cut < int64(len(s.Events)) && !session.IsTaggedEndSeed(s.Events[cut]) {
				t.Fatalf("cut %d is not a tagged marker", cut)
			}
			_ = session.ValidateLog(s.Header, s.Events)
		}
	})
}

// FuzzRecordDocument decodes arbitrary per-record cache documents: no
// panic, and an accepted record holds no more rows than the document has
// bytes.
func FuzzRecordDocument(f *testing.F) {
	f.Add([]byte(`{"version":7,"record":{"identity":{"formatVersion":4,"createdAt":1,"isSeeded":false,"inheritedEventCount":0},"rows":{"subagent":{"ver":2,"seq":0,"val":{}}}}}`))
	f.Add([]byte(`{"version":8,"record":{}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		rec, err := decodeRecordDocument(data)
		if err != nil {
			return
		}
		if !rec.perRecord || len(rec.rows) > len(data) {
			t.Fatalf("record %+v from %d bytes", rec, len(data))
		}
	})
}

// FuzzFileGeneration classifies arbitrary file names: no panic; a name
// read as generation N ≥ 1 is one LogFileName would give for N.
func FuzzFileGeneration(f *testing.F) {
	for _, name := range []string{"session.v4.jsonl.zstd", "session.1.v3.jsonl", "session.v03.jsonl", "session.jsonl", "session.lock"} {
		f.Add(name)
	}
	f.Fuzz(func(t *testing.T, name string) {
		stem, gen, ok := fileGeneration(name)
		if !ok || gen == 0 || stem != "session" {
			return
		}
		c := CompressionNone
		if bytes.HasSuffix([]byte(name), []byte(suffixZstd)) {
			c = CompressionZstd
		}
		if gen < 1<<62 && LogFileName(gen, c) != name {
			t.Fatalf("%q read as generation %d, written as %q", name, gen, LogFileName(gen, c))
		}
	})
}
