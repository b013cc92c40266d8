package subagent

import (
	"context"
	"errors"
	"runtime"
	"sync"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/projcache"
)

// maintainChunk bounds how many sessions a cache verify or rebuild holds
// at once: their records, recorded folds and logs.
const maintainChunk = 256

// readLogs reads the logs of ids from r as Checkpoints.Read reads each one
// and calls fn with each, in no order: through the store's batch audit
// (backend.BatchAuditor, a fixed number of queries for the batch) when it
// has one. A log that does not read, and an id the batch does not know,
// is read again on its own, so its error is exactly the single read's.
func readLogs(ctx context.Context, r backend.LogReader, ids []string, fn func(id string, log projcache.LogRead) error) error {
	single := inspectRead(r)
	rest := ids
	if b, ok := r.(backend.BatchAuditor); ok && len(ids) > 0 {
		read := make(map[string]bool, len(ids))
		var again []string
		err := b.AuditEach(ctx, ids, func(a *backend.AuditRead) error {
			if a.ReadErr != nil {
				again = append(again, a.Header.ID)
				return nil
			}
			read[a.Header.ID] = true
			return fn(a.Header.ID, projcache.LogRead{Header: a.Header, Events: a.Events})
		})
		switch {
		case errors.Is(err, backend.ErrNotFound) && ctx.Err() == nil:
			// A record whose session is gone: the others are read one
			// at a time, and it reads as gone.
			again = again[:0]
			for _, id := range ids {
				if !read[id] {
					again = append(again, id)
				}
			}
		case err != nil:
			return err
		}
		rest = again
	}
	for _, id := range rest {
		h, events, err := single(ctx, id)
		if err != nil && ctx.Err() != nil {
			return ctx.Err()
		}
		if err := fn(id, projcache.LogRead{Header: h, Events: events, Err: err}); err != nil {
			return err
		}
	}
	return nil
}

// pool runs check on a bounded pool of goroutines (GOMAXPROCS of them),
// fed by feed on the calling goroutine: feed calls submit for each job,
// which blocks while every worker is busy, so a few jobs are in flight.
func pool[J any](feed func(submit func(J)) error, check func(J)) error {
	jobs := make(chan J)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				check(j)
			}
		}()
	}
	err := feed(func(j J) { jobs <- j })
	close(jobs)
	wg.Wait()
	return err
}

// VerifyReport is what Verify checked and found: the checkpoint records
// (as Cache.Verify reports them) and the registry folds recorded beside
// the logs.
type VerifyReport struct {
	Records projcache.VerifyReport
	Folds   FoldReport
}

// Verify is Cache.Verify and VerifyFolds in one pass over ids (nil: every
// session with a checkpoint record), with the same reports: a chunk of
// sessions at a time, their records and recorded folds are read in one
// query each and their logs in a batch (readLogs), each log once, and
// checked against both on a bounded pool of goroutines while the batch is
// read. Findings keep the order of the targets, the records' before the
// folds'. It writes nothing; call it in one read snapshot of the store it
// was built on. progress (may be nil) is called before the first session
// and after each chunk.
func (c Checkpoints) Verify(ctx context.Context, ids []string, progress func(done, total int)) (VerifyReport, error) {
	var rep VerifyReport
	reg := NewRegistry()
	err := c.eachChunk(ctx, ids, progress, func(part []string) error {
		return c.verifyChunk(ctx, reg, part, &rep)
	})
	return rep, err
}

// eachChunk calls fn on ids (nil: every session with a checkpoint record)
// maintainChunk at a time, in order; progress (may be nil) is called before
// the first chunk and after each.
func (c Checkpoints) eachChunk(ctx context.Context, ids []string, progress func(done, total int), fn func(part []string) error) error {
	if ids == nil {
		var err error
		if ids, err = c.Cache.IDs(ctx); err != nil {
			return err
		}
	}
	if progress != nil {
		progress(0, len(ids))
	}
	for start := 0; start < len(ids); start += maintainChunk {
		end := min(start+maintainChunk, len(ids))
		if err := fn(ids[start:end]); err != nil {
			return err
		}
		if progress != nil {
			progress(end, len(ids))
		}
	}
	return nil
}

// verified is one session's outcome in a verify.
type verified struct {
	record, folded bool
	findings       []projcache.Finding
	events         int
	fold           *projcache.Finding
}

func (c Checkpoints) verifyChunk(ctx context.Context, reg *projcache.Registry, ids []string, rep *VerifyReport) error {
	recs, err := c.Cache.RecordsOf(ctx, ids)
	if err != nil {
		return err
	}
	var folds map[string]backend.ColdVerdict
	if c.verdicts != nil {
		if folds, err = c.verdicts.ColdVerdicts(ctx, ids); err != nil {
			return err
		}
	}
	out := make([]verified, len(ids))
	at := make(map[string]int, len(ids))
	var read []string
	for i, id := range ids {
		out[i].record = recs.Has(id)
		out[i].folded = c.verdicts != nil && recordedUnder(reg, folds[id].RegistryFold)
		if _, dup := at[id]; !dup && (out[i].record || out[i].folded) {
			at[id] = i
			read = append(read, id)
		}
	}
	type job struct {
		id  string
		log projcache.LogRead
	}
	err = pool(func(submit func(job)) error {
		return readLogs(ctx, c.logs, read, func(id string, log projcache.LogRead) error {
			submit(job{id, log})
			return ctx.Err()
		})
	}, func(j job) {
		v := &out[at[j.id]]
		if v.record {
			v.findings, v.events = c.Cache.CheckLog(recs, j.id, j.log)
		}
		if v.folded {
			if why := FoldDisagreement(reg, folds[j.id].RegistryFold, j.log.Events, j.log.Err); why != "" {
				v.fold = &projcache.Finding{SessionID: j.id, Kind: projcache.KindFoldMismatch, Reason: why}
			}
		}
	})
	if err != nil {
		return err
	}
	for i, id := range ids {
		v := out[i]
		if first, ok := at[id]; ok && first != i {
			v = out[first] // an id named twice is checked once, reported twice
		}
		if !v.record {
			rep.Records.NoRecord = append(rep.Records.NoRecord, id)
		} else {
			rep.Records.Checked++
			rep.Records.Events += v.events
			rep.Records.Findings = append(rep.Records.Findings, v.findings...)
		}
		if v.folded {
			rep.Folds.Checked++
			if v.fold != nil {
				rep.Folds.Findings = append(rep.Folds.Findings, *v.fold)
			}
		}
	}
	return nil
}
