package subagent

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/dsh-project/dsh/internal/corpus"
	"github.com/dsh-project/dsh/internal/projcache"
	"github.com/dsh-project/dsh/internal/session"
)

const benchLogLen = 100_000

// benchLog is a long log of assistant messages whose data is dataSize bytes
// (shared, since the fold must never read it), with a descriptor every
// descEvery events (0 = one descriptor at seq 0 only).
func benchLog(dataSize, descEvery int) []session.Event {
	data := json.RawMessage(`{"text":"` + strings.Repeat("x", max(dataSize-11, 0)) + `"}`)
	descriptor := json.RawMessage(desc("bench child"))
	events := make([]session.Event, benchLogLen)
	for i := range events {
		events[i] = session.Event{Type: session.TypeAssistantMsg, Seq: int64(i), Time: 1, Data: data, SurfaceOp: json.RawMessage(`"append"`)}
		if i == 0 || (descEvery > 0 && i%descEvery == 0) {
			events[i].Type, events[i].Data, events[i].SurfaceOp = session.TypeDescriptor, descriptor, nil
		}
	}
	return events
}

// BenchmarkFold measures the subagent unit's fold over long logs through the
// registry. ns/event must not grow with the size of non-descriptor data:
// those events are skipped on their type alone.
func BenchmarkFold(b *testing.B) {
	reg := projcache.NewRegistry()
	if err := RegisterUnit(reg); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		dataSize, descEvery int
	}{
		{16, 0}, {64 << 10, 0}, {16, 1000}, {16, 100},
	} {
		events := benchLog(c.dataSize, c.descEvery)
		name := fmt.Sprintf("data=%dB/descEvery=%d", c.dataSize, c.descEvery)
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if _, err := reg.Restore(events); err != nil {
					b.Fatal(err)
				}
			}
			perEvent := float64(b.Elapsed().Nanoseconds()) / float64(b.N) / benchLogLen
			b.ReportMetric(perEvent, "ns/event")
			b.ReportMetric(1e9/perEvent, "events/s")
		})
	}
}

// coldChild is one cold child as a batch read returns it: its header and
// its one descriptor event.
func coldChild() (corpus.Record, []session.Event) {
	h := session.Header{ID: "child", CreatedAt: 2, Cwd: strp("/work"), ParentSession: strp("parent"), Origin: strp(session.OriginSubagent)}
	return corpus.Record{Header: h, ParentID: "parent", Depth: 1}, []session.Event{
		{Type: session.TypeDescriptor, Seq: 2, Time: 1, Data: json.RawMessage(desc("review the parser"))},
	}
}

// BenchmarkResolveRead is a cold listing's work per child once its
// descriptor events are read: the lifecycle witness, the fold of every
// registered unit, the identity and the own-suffix check.
func BenchmarkResolveRead(b *testing.B) {
	l := &Lister{Units: NewRegistry()}
	rec, events := coldChild()
	b.ReportAllocs()
	for b.Loop() {
		if res := l.resolveRead(rec, rec.Header, events); res.Row == nil || res.Row.Kind != KindChild {
			b.Fatalf("resolved %+v", res)
		}
	}
}

// BenchmarkResolveReadFloor is BenchmarkResolveRead's floor: what
// scripts/benchfloor's cold listing does per child, one json.Unmarshal of
// the descriptor.
func BenchmarkResolveReadFloor(b *testing.B) {
	_, events := coldChild()
	b.ReportAllocs()
	for b.Loop() {
		var d struct {
			Version int     `json:"version"`
			Mode    string  `json:"mode"`
			Label   *string `json:"label"`
		}
		if err := json.Unmarshal(events[0].Data, &d); err != nil || d.Label == nil {
			b.Fatal(err)
		}
	}
}
