package projcache_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/projcache"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/subagent"
)

const benchChildren = 10_000

// benchCache stores one checkpoint for each of a parent's 10,000 unseeded
// children and returns their headers.
func benchCache(b *testing.B) (*projcache.Cache, []session.Header) {
	b.Helper()
	ctx := context.Background()
	st := openDB(b)
	reg := projcache.NewRegistry()
	if err := subagent.RegisterUnit(reg); err != nil {
		b.Fatal(err)
	}
	f := reg.NewFold()
	f.Apply(session.Event{Type: session.TypeDescriptor, Seq: 0, Data: []byte(`{"version":2,"mode":"continuable","provider":"spawn","label":"bench"}`)})
	cp, err := f.Checkpoint()
	if err != nil {
		b.Fatal(err)
	}
	headers := make([]session.Header, benchChildren)
	err = st.Update(ctx, func(tx backend.Store) error {
		c := projcache.NewCache(tx, reg)
		for i := range headers {
			h := childHeader(fmt.Sprintf("%08d-0000-4000-8000-000000000000", i))
			h.SeedLength = nil
			headers[i] = h
			if err := c.Put(ctx, h, 0, cp); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return projcache.NewCache(st, reg), headers
}

// BenchmarkLookup10k reads the checkpoints of one parent's 10,000 children:
// one LookupMany query against one Lookup query per child.
func BenchmarkLookup10k(b *testing.B) {
	ctx := context.Background()
	c, headers := benchCache(b)
	report := func(b *testing.B) {
		b.ReportMetric(float64(benchChildren*b.N)/b.Elapsed().Seconds(), "records/s")
	}
	b.Run("LookupMany", func(b *testing.B) {
		for b.Loop() {
			got, err := c.LookupMany(ctx, headers)
			if err != nil || len(got) != benchChildren || got[headers[0].ID].Status != projcache.Hit {
				b.Fatalf("%d lookups, %v", len(got), err)
			}
		}
		report(b)
	})
	b.Run("LookupEach", func(b *testing.B) {
		for b.Loop() {
			for _, h := range headers {
				l, err := c.Lookup(ctx, h)
				if err != nil || l.Status != projcache.Hit {
					b.Fatalf("%s: %v %v", h.ID, l.Status, err)
				}
			}
		}
		report(b)
	})
}
