package sqlitepersist

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/dsh-project/dsh/internal/session"
)

// BenchmarkAppend measures durable appends (each one a BEGIN IMMEDIATE
// transaction with synchronous=FULL) of assistant/chunk events, one per
// transaction and 100 per transaction.
func BenchmarkAppend(b *testing.B) {
	for _, batch := range []int{1, 100} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			ctx := context.Background()
			s, _ := openStore(b)
			start := newLog().turnStart().user("stream").stepStart()
			if err := s.CreateSession(ctx, rootHeader("s"), start.events); err != nil {
				b.Fatal(err)
			}
			lb := continueFrom(start.events)
			lb.step = 1
			appended := 0
			for b.Loop() {
				lb.events = lb.events[:0]
				for range batch {
					lb.chunk("a streamed token of text ")
				}
				if err := s.Append(ctx, "s", lb.events[0].Seq, lb.events); err != nil {
					b.Fatal(err)
				}
				appended += batch
			}
			b.ReportMetric(float64(appended)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// inspectCorpus builds a session of turns with streamed chunks, tool calls
// and descriptors, and returns its total event data size.
func inspectCorpus(b *testing.B, s *Store, turns int) int64 {
	lb := newLog()
	text := strings.Repeat("lorem ipsum dolor sit amet ", 8)
	for i := range turns {
		lb.turnStart().user(fmt.Sprintf("question %d: %s", i, text)).stepStart()
		for range 20 {
			lb.chunk(text)
		}
		call := fmt.Sprintf("call-%d", i)
		lb.assistant(text, call).toolCall(call).toolResult(call, text+text).stepEnd()
		if i%10 == 0 {
			lb.descriptor(fmt.Sprintf("child-%d", i))
		}
		lb.turnEnd()
	}
	if err := s.CreateSession(context.Background(), rootHeader("big"), lb.events); err != nil {
		b.Fatal(err)
	}
	var size int64
	for _, e := range lb.events {
		size += int64(len(e.Data))
	}
	return size
}

// BenchmarkInspect reports Inspect throughput in MB/s of event data (full
// decode, contiguity and DSH validation of every event).
func BenchmarkInspect(b *testing.B) {
	ctx := context.Background()
	s, _ := openStore(b)
	b.SetBytes(inspectCorpus(b, s, 200))
	for b.Loop() {
		if _, err := s.Inspect(ctx, "big"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkInspectTypesDescriptors is the listing's read of a verified log:
// only descriptor rows, through the partial index.
func BenchmarkInspectTypesDescriptors(b *testing.B) {
	ctx := context.Background()
	s, _ := openStore(b)
	inspectCorpus(b, s, 200)
	for b.Loop() {
		ins, err := s.InspectTypes(ctx, "big", session.TypeDescriptor)
		if err != nil || len(ins.Events) != 20 {
			b.Fatalf("%v, %d descriptors", err, len(ins.Events))
		}
	}
}

// bulkSessions inserts total sessions in one transaction; every
// total/children-th one (spread through the table) is a child of "parent",
// the rest are children of other parents.
func bulkSessions(b *testing.B, s *Store, total, children int) {
	ctx := context.Background()
	err := s.update(ctx, func(tx *Store) error {
		stmt, err := tx.tx.PrepareContext(ctx, `INSERT INTO sessions (id, version, created_at, cwd, parent_session, origin, delegation_depth)
			VALUES (?, 0, ?, '/w', ?, 'subagent', 1)`)
		if err != nil {
			return err
		}
		defer stmt.Close()
		every := total / children
		for i := range total {
			parent := fmt.Sprintf("other-%d", i%(total/10+1))
			if i%every == 0 {
				parent = "parent"
			}
			if _, err := stmt.ExecContext(ctx, fmt.Sprintf("session-%08d", i), int64(1_700_000_000_000+(i*7919)%total), parent); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}

// BenchmarkChildrenOf lists the 10,000 children of one parent in a store of
// 10,000 sessions and in one of 200,000: with the covering index the two
// costs should match (the ratio of their ns/op is the check).
func BenchmarkChildrenOf(b *testing.B) {
	const children = 10_000
	for _, total := range []int{10_000, 200_000} {
		s, _ := openStore(b)
		bulkSessions(b, s, total, children)
		b.Run(fmt.Sprintf("store=%d", total), func(b *testing.B) {
			ctx := context.Background()
			for b.Loop() {
				n := 0
				if err := s.ChildrenOf(ctx, "parent", func(session.Header) error { n++; return nil }); err != nil {
					b.Fatal(err)
				}
				if n != children {
					b.Fatalf("%d children, want %d", n, children)
				}
			}
		})
	}
}
