package transfer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/dsh-project/dsh/internal/backend"
	"github.com/dsh-project/dsh/internal/dsherr"
	"github.com/dsh-project/dsh/internal/dshformat"
	"github.com/dsh-project/dsh/internal/projcache"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/storedlog"
	"github.com/dsh-project/dsh/internal/subagent"
)

// Outcome is what an import did with one session.
type Outcome string

// Import outcomes.
const (
	// Imported: the session was copied (with DryRun: would be).
	Imported Outcome = "imported"
	// Appended: the database held the session with a shorter log, equal to
	// the start of the source's; the source's later events were appended,
	// validated as any append (with DryRun: would be).
	Appended Outcome = "appended"
	// Skipped: the database already holds the session with the same
	// lifecycle witness and the source's log, or a longer log starting with
	// it; nothing was written.
	Skipped Outcome = "skipped"
	// Conflict: the database holds the id with another lifecycle, or with a
	// log the source's does not continue; nothing was written.
	Conflict Outcome = "conflict"
	// Unreadable: the source cannot offer the session (a refused format
	// version, an unreadable header, an id in two files, a log over dsh's
	// size limit); nothing was written.
	Unreadable Outcome = "unreadable"
)

// Result is one session's import.
type Result struct {
	// ID is the session id; "" when the source could not read one.
	ID string
	// Location is the file or database the session was found in, when the
	// source says.
	Location string
	Outcome  Outcome
	// Reason says why a session was skipped, conflicting or unreadable.
	Reason string
	// Events is the number of events stored (or, with DryRun, to store);
	// for Appended, the number appended.
	Events int
	// What an imported log was kept with, as found.
	Torn *backend.TornTail // a torn tail, stored beside the log
	// Damaged: the log is damaged inside its committed region; the events
	// before the damage and the rest as found were stored (Invalid says
	// why it does not read).
	Damaged     bool
	Invalid     string // the log fails DSH's validation or is damaged: why
	Interrupted bool   // the log ends inside a turn
	// Checkpointed: a projection checkpoint was written for the session
	// (only for logs that read and fold).
	Checkpointed bool
	// TextReplaced: the source's reader read some events from text that
	// is not UTF-8, replacing its ill-formed bytes with U+FFFD; an
	// imported or appended session's store records it (nil when none).
	TextReplaced *backend.TextReplaced
	// refusal is what the store records about an unreadable session.
	refusal *backend.Refusal
}

// Summary is a whole import: counts by outcome and, unless the results are
// streamed to ImportOptions.OnResult, every session's result.
type Summary struct {
	DryRun     bool
	Imported   int
	Appended   int
	Skipped    int
	Conflicts  int
	Unreadable int
	// Events counts the events of the imported sessions and those
	// appended.
	Events int
	// Results are the sessions' results, the source's sessions in id order
	// followed by files that did not yield a session. It stays nil when
	// ImportOptions.OnResult is set: a streaming caller holds nothing per
	// session, so an import's memory is flat in the number of sessions.
	Results []Result
}

// Failed reports whether something could not be imported: a conflict or an
// unreadable session.
func (s Summary) Failed() bool { return s.Conflicts > 0 || s.Unreadable > 0 }

func (s *Summary) count(r Result) {
	switch r.Outcome {
	case Imported:
		s.Imported++
		s.Events += r.Events
	case Appended:
		s.Appended++
		s.Events += r.Events
	case Skipped:
		s.Skipped++
	case Conflict:
		s.Conflicts++
	case Unreadable:
		s.Unreadable++
	}
}

// ImportOptions configure Import.
type ImportOptions struct {
	// DryRun reads and judges every session without writing anything.
	DryRun bool
	// NoCheckpoints writes no projection checkpoints.
	NoCheckpoints bool
	// ReadAhead is how many sessions are read from the source concurrently
	// while earlier ones are written (default 2).
	ReadAhead int
	// Progress, when set, is called with the number of sessions handled and
	// the total, after each one.
	Progress func(done, total int)
	// OnResult, when set, is called with each session's result as soon as
	// it is committed, in the order Summary.Results would hold them (which
	// then stays nil).
	OnResult func(Result)
}

// Destination is the database an import writes to: the backend contract's
// store, with its transactions (each session is written in one).
type Destination = backend.Store

// Import copies every session of src into dst exactly as found: logs that
// fail DSH's validation, logs damaged inside their committed region (the
// valid prefix and the rest as found), torn tails (kept beside the log) and
// interrupted turns are stored as they are, so they list and diagnose the
// same after the import as in the source. Each session is written in its own
// transaction together with its projection checkpoint (written only for a
// log that reads and folds). An id dst already holds with another lifecycle
// witness is a conflict. With the same witness the logs are compared: the
// same log is skipped; a source log that continues the stored one has its
// new events appended (validated as any append, and refused as a conflict
// when they do not validate); a log that differs from the stored one is a
// conflict. Nothing stored is ever overwritten. Sessions the source cannot read are reported as
// unreadable, with the file they were found in.
//
// dst may be nil with DryRun (no database yet: nothing is held). Only a
// failure of dst itself or cancellation stops the import; it then returns
// the summary so far with the error.
func Import(ctx context.Context, dst Destination, src dshformat.Source, opts ImportOptions) (Summary, error) {
	sum := Summary{DryRun: opts.DryRun}
	if dst == nil && !opts.DryRun {
		return sum, dsherr.New(dsherr.Internal, "import needs a destination database")
	}
	total, done := 0, 0
	step := func() {
		done++
		if opts.Progress != nil {
			opts.Progress(done, total)
		}
	}
	w := &importer{dst: dst, src: src, opts: opts, units: subagent.NewRegistry()}
	if !opts.DryRun {
		var err error
		if w.refusalsHeld, err = holdsRefusals(ctx, dst); err != nil {
			return sum, err
		}
	}
	add := func(r Result) {
		sum.count(r)
		if opts.OnResult != nil {
			opts.OnResult(r)
		} else {
			sum.Results = append(sum.Results, r)
		}
		step()
	}
	if err := w.sessions(ctx, &total, add); err != nil {
		return sum, err
	}
	problems := src.Problems()
	unoffered := make([]Result, len(problems))
	for i, p := range problems {
		r := Result{ID: p.ID, Location: p.Path, Outcome: Unreadable, Reason: p.Err.Error()}
		r.refusal = &backend.Refusal{Location: p.Path, ID: p.ID, Code: backend.RefusedHeader, Reason: p.Err.Error()}
		unoffered[i] = r
	}
	if !opts.DryRun && len(unoffered) > 0 {
		err := dst.Update(ctx, func(tx backend.Store) error {
			for _, r := range unoffered {
				if err := recordRefusal(ctx, tx, r); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return sum, err
		}
	}
	for _, r := range unoffered {
		add(r)
	}
	return sum, nil
}

// recordRefusal records in st (the import's transaction) why r, an
// unreadable session, was not stored, so that diagnose and list of the
// database say what they say of the source.
func recordRefusal(ctx context.Context, st backend.Store, r Result) error {
	if r.refusal == nil || r.Outcome != Unreadable {
		return nil
	}
	return st.RecordRefusal(ctx, *r.refusal)
}

// refusalOf is the record of a session the source lists with header h (nil:
// none read) but cannot read (err), found at location: the finding
// diagnose in place gives for it.
func refusalOf(location string, h *session.Header, err error) *backend.Refusal {
	r := &backend.Refusal{Location: location, Header: h, Code: backend.RefusedLog, Reason: err.Error()}
	if h != nil {
		r.ID = h.ID
	}
	var refused *backend.RefusedError
	var version *dshformat.UnsupportedVersionError
	var row *backend.CorruptRowError
	switch {
	case errors.As(err, &refused):
		// Another dsh database's refused header: its record carries over.
		*r = refused.Refusal
		r.Header = h
	case errors.As(err, &version):
		r.Code = backend.RefusedFormat
	case errors.As(dshformat.ReadFailure(r.ID, err), &row):
		r.Seq = &row.Seq
	}
	return r
}

// headerChunker is a source that lends its headers a bounded number at a
// time, in id order (dshformat.OpenJSONLChunked): an import of a large
// tree holds one chunk's.
type headerChunker interface {
	HeaderChunks(ctx context.Context, fn func(dshformat.HeaderChunk) error) error
}

// sessions imports every session the source offers, in id order, setting
// total to the sessions and problems the source holds before the first.
func (w *importer) sessions(ctx context.Context, total *int, add func(Result)) error {
	if src, ok := w.src.(headerChunker); ok {
		var werr error
		err := src.HeaderChunks(ctx, func(c dshformat.HeaderChunk) error {
			*total = c.Found
			werr = w.pipeline(ctx, c.N, c.At, add)
			return werr
		})
		switch {
		case werr != nil:
			return werr
		case err != nil:
			return SourceError("read source headers", err)
		}
		return nil
	}
	n, headerAt, err := sourceHeaders(ctx, w.src)
	if err != nil {
		return SourceError("read source headers", err)
	}
	*total = n + len(w.src.Problems())
	return w.pipeline(ctx, n, headerAt, add)
}

// headerIndex is a source that lends its headers by position, in the order
// Headers returns them, so that an import walking them holds no copy.
type headerIndex interface {
	HeaderIndex(ctx context.Context) (n int, at func(int) session.Header, err error)
}

// sourceHeaders is how many headers src offers and how to get the i-th.
func sourceHeaders(ctx context.Context, src dshformat.Source) (int, func(int) session.Header, error) {
	if idx, ok := src.(headerIndex); ok {
		return idx.HeaderIndex(ctx)
	}
	headers, err := src.Headers(ctx)
	if err != nil {
		return 0, nil, err
	}
	return len(headers), func(i int) session.Header { return headers[i] }, nil
}

type importer struct {
	dst   Destination
	src   dshformat.Source
	opts  ImportOptions
	units *projcache.Registry
	// refusalsHeld: the store held records of refused sessions when the
	// import began, which storing a session may void. Without any, none
	// is looked for: this import records only sessions it does not
	// store (a file yields one session, and ids are unique in a source).
	refusalsHeld bool
	// looked are the ids of the batch lookAhead read, held those the
	// destination holds, with their headers.
	looked map[string]bool
	held   map[string]session.Header
}

// errHeld stops a walk of the refusal records at the first.
var errHeld = errors.New("a refusal is recorded")

// holdsRefusals reports whether dst keeps any record of a refused session.
func holdsRefusals(ctx context.Context, dst Destination) (bool, error) {
	err := dst.Refusals(ctx, func(backend.Refusal) error { return errHeld })
	if errors.Is(err, errHeld) {
		return true, nil
	}
	return false, err
}

// prepared is one session read ahead of the writer: either a decided result
// (skipped, conflicting, unreadable) or the session to write.
type prepared struct {
	result  *Result
	session *dshformat.Session
	err     error
}

// pipeline reads sessions from the source concurrently, a bounded number
// ahead, and writes them one by one in source order.
func (w *importer) pipeline(ctx context.Context, n int, headerAt func(int) session.Header, emit func(Result)) error {
	readers := w.opts.ReadAhead
	if readers <= 0 {
		readers = 2
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	// Each token is one session read but not yet written: it bounds how
	// much of the corpus is held in memory.
	tokens := make(chan struct{}, 2*readers)
	// Session i's result goes to slots[i%len(slots)]: job i is handed out
	// only once fewer than cap(tokens) sessions are in flight, so session
	// i-len(slots) has been taken from that slot by then. A ring, not a
	// slot per session, keeps memory flat in the number of sessions.
	slots := make([]chan prepared, cap(tokens)+1)
	for i := range slots {
		slots[i] = make(chan prepared, 1)
	}
	jobs := make(chan int)
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(jobs)
		for i := range n {
			select {
			case tokens <- struct{}{}:
			case <-ctx.Done():
				return
			}
			select {
			case jobs <- i:
			case <-ctx.Done():
				return
			}
		}
	}()
	for range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				slots[i%len(slots)] <- w.prepare(ctx, headerAt(i))
			}
		}()
	}
	// next takes session i from its slot once the readers have it.
	next := func(i int) (prepared, error) {
		select {
		case p := <-slots[i%len(slots)]:
			<-tokens
			return p, p.err
		case <-ctx.Done():
			return prepared{}, ctx.Err()
		}
	}
	results := make([]Result, 0, batchSessions)
	for i := 0; i < n; {
		results = results[:0]
		batch := func(tx Destination) error {
			if err := w.lookAhead(ctx, tx, i, min(n, i+batchSessions), headerAt); err != nil {
				return err
			}
			for events := 0; i < n && len(results) < batchSessions && events < batchEvents; i++ {
				p, err := next(i)
				if err != nil {
					return err
				}
				r, err := w.writeOne(ctx, tx, headerAt(i), p)
				if err != nil {
					return err
				}
				if !w.opts.DryRun {
					if err := recordRefusal(ctx, tx, r); err != nil {
						return err
					}
				}
				results = append(results, r)
				if p.session != nil {
					events += len(p.session.Events)
				}
			}
			if w.opts.DryRun {
				return nil
			}
			// The listing rows of the batch's children, resolved from
			// the logs as the batch stored them.
			ids := make([]string, 0, len(results))
			for _, r := range results {
				if r.ID != "" {
					ids = append(ids, r.ID)
				}
			}
			return subagent.RefreshResolvedRowsIn(ctx, tx, ids)
		}
		if err := w.inBatch(ctx, batch); err != nil {
			return err
		}
		// A result is reported once what it reports is committed, so a
		// crash loses nothing reported and leaves no session
		// half-imported (each session's writes are all in the batch's
		// transaction).
		for _, r := range results {
			emit(r)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return nil
}

// A batch's sessions are written in one transaction, each inside its own
// savepoint, as they are read: one commit (one fsync) per batch instead of
// per session, while what is held in memory is a session's result, not its
// log. The limits bound the transaction (the write lock is held while the
// batch is read and written).
const (
	batchSessions = 1000
	batchEvents   = 64 << 10
)

// inBatch runs fn in one write transaction of the destination (with
// DryRun, on the store itself, nil when there is none). A store that
// pipelines its writes (backend.PipelinedUpdater) sends the batch's
// sessions' writes together instead of a round trip each: every failure of
// the store fails the batch anyway, and what a session's savepoint undoes
// (a session refused before anything of it is written) waits for no
// result.
func (w *importer) inBatch(ctx context.Context, fn func(tx Destination) error) error {
	if w.opts.DryRun {
		return fn(w.dst)
	}
	// Each session nests in its own Update (a savepoint): a view is a
	// Store, so it is a Transactor.
	if p, ok := w.dst.(backend.PipelinedUpdater); ok {
		return p.UpdatePipelined(ctx, func(tx backend.Store) error { return fn(tx) })
	}
	return w.dst.Update(ctx, func(tx backend.Store) error { return fn(tx) })
}

// lookAhead reads, in the batch's transaction tx, which of the listed
// sessions from to end the destination holds, in one query, so that
// deciding each session (a new one, a re-import, a conflict) costs no
// round trip of its own. It reads nothing, and each session is looked up
// alone, when the store cannot read headers in a batch, in a dry run, or
// when the store holds records of refusals (clearing one may remove a
// header). The ids of a source are unique, so the batch's own writes
// change nothing it read.
func (w *importer) lookAhead(ctx context.Context, tx Destination, from, end int, headerAt func(int) session.Header) error {
	w.held, w.looked = nil, nil
	r, ok := tx.(backend.HeaderBatchReader)
	if !ok || w.opts.DryRun || w.refusalsHeld {
		return nil
	}
	ids := make([]string, 0, end-from)
	w.looked = make(map[string]bool, end-from)
	for j := from; j < end; j++ {
		if id := headerAt(j).ID; id != "" {
			ids = append(ids, id)
			w.looked[id] = true
		}
	}
	held, err := r.HeadersOf(ctx, ids)
	if err != nil {
		return err
	}
	w.held = held
	return nil
}

// storedHeader is the header tx holds for id: from lookAhead's read when
// it looked id up, else read now.
func (w *importer) storedHeader(ctx context.Context, tx Destination, id string) (session.Header, error) {
	if w.looked[id] {
		if h, ok := w.held[id]; ok {
			return h, nil
		}
		return session.Header{}, storedlog.NotFound(id)
	}
	return tx.Header(ctx, id)
}

// writeOne is one session's result, written through tx when it is to be.
func (w *importer) writeOne(ctx context.Context, tx Destination, listed session.Header, p prepared) (Result, error) {
	if p.result != nil {
		return w.unread(ctx, tx, listed, *p.result)
	}
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	return w.write(ctx, tx, listed, p.session)
}

// unread is the result of a session the source could not read: a conflict
// when the database holds its id with another lifecycle (judged by the
// listed header, as for a session that reads), else r. Whether an id is
// held is decided here, under the batch's write lock, once per session.
func (w *importer) unread(ctx context.Context, tx Destination, listed session.Header, r Result) (Result, error) {
	if tx == nil || r.Outcome != Unreadable || listed.ID == "" {
		return r, nil
	}
	stored, err := w.storedHeader(ctx, tx, listed.ID)
	switch {
	case errors.Is(err, backend.ErrNotFound):
		return r, nil
	case err != nil:
		return r, err
	}
	if c := judgeExisting(stored, listed); c.Outcome == Conflict {
		return c, nil
	}
	return r, nil
}

// prepare reads a session from the source, a bounded number ahead of the
// writer, which decides what the database's holdings make of it.
func (w *importer) prepare(ctx context.Context, h session.Header) prepared {
	if h.ID == "" {
		// DSH requires a non-empty id, and no dsh command could address
		// the session (export --all would fail on it).
		r := Result{Outcome: Unreadable, Reason: "session id is empty: DSH's header rule wants a non-empty string and no dsh command could address it; not imported"}
		// DSH lists it all the same (its header fails validation, so
		// its log does not read): the store keeps the header to list it.
		if s, err := w.src.ReadAsFound(ctx, h.ID); err == nil {
			r.Location = s.Location
			r.refusal = &backend.Refusal{Location: r.Location, Header: &h, Code: backend.RefusedLog, Reason: r.Reason}
		} else {
			r.Location = pathOf(err)
			r.refusal = refusalOf(r.Location, &h, err)
		}
		return prepared{result: &r}
	}
	s, err := w.src.ReadAsFound(ctx, h.ID)
	if err != nil {
		if ctx.Err() != nil {
			return prepared{err: ctx.Err()}
		}
		r := Result{ID: h.ID, Location: pathOf(err), Outcome: Unreadable, Reason: err.Error()}
		r.refusal = refusalOf(r.Location, &h, err)
		return prepared{result: &r}
	}
	return prepared{session: s}
}

// pathOf is the file a source's error names, "" when it names none.
func pathOf(err error) string {
	var corrupt *dshformat.CorruptError
	var refusal *dshformat.UnsupportedVersionError
	var unread *dshformat.FileError
	switch {
	case errors.As(err, &corrupt):
		return corrupt.Path
	case errors.As(err, &refusal):
		return refusal.Path
	case errors.As(err, &unread):
		return unread.Path
	}
	return ""
}

// judgeExisting decides about an id the database already holds by its
// header alone: a conflict, or Skipped pending the comparison of the logs.
func judgeExisting(stored, found session.Header) Result {
	if field := witnessDiff(stored.Witness(), found.Witness()); field != "" {
		return Result{ID: found.ID, Outcome: Conflict,
			Reason: fmt.Sprintf("the database holds session %q with another lifecycle (%s differs); nothing overwritten", found.ID, field)}
	}
	return Result{ID: found.ID, Outcome: Skipped, Reason: "already imported (same lifecycle)"}
}

// reimport compares the source's log of a session the database holds with
// the same lifecycle against the stored one, and appends what the source
// has beyond it when the stored log is a valid prefix of the source's.
func (w *importer) reimport(ctx context.Context, st backend.Store, s *dshformat.Session, dry bool) (Result, error) {
	id := s.Header.ID
	r := Result{ID: id, Location: s.Location, Outcome: Skipped}
	a, err := st.Audit(ctx, id)
	if err != nil {
		return r, err
	}
	conflict := func(format string, args ...any) (Result, error) {
		r.Outcome, r.Reason = Conflict, fmt.Sprintf(format, args...)+"; nothing overwritten"
		return r, nil
	}
	srcEvents, srcErr := session.NormalizeLegacy(id, s.Events)
	if srcErr == nil {
		srcErr = session.ValidateLog(s.Header, srcEvents)
	}
	appendable := a.ReadErr == nil && a.Torn == nil && s.Damage == nil && s.Torn == nil && srcErr == nil
	if !appendable {
		if why := sameAsFound(a, s); why != "" {
			return conflict("the database holds session %q with another log: %s", id, why)
		}
		r.Reason = "already imported (same log)"
		return r, nil
	}
	stored := a.Events
	for i := range min(len(stored), len(srcEvents)) {
		if !sameEvent(stored[i], srcEvents[i]) {
			return conflict("the database holds session %q with another log: the event at seq %d differs", id, stored[i].Seq)
		}
	}
	switch {
	case len(srcEvents) == len(stored):
		r.Reason = "already imported (same log)"
		return r, nil
	case len(srcEvents) < len(stored):
		r.Reason = fmt.Sprintf("already imported; the database holds %d later event(s)", len(stored)-len(srcEvents))
		return r, nil
	}
	grown := srcEvents[len(stored):]
	r.Outcome, r.Events = Appended, len(grown)
	if dry {
		v := session.NewValidator(s.Header)
		for _, e := range srcEvents {
			if err := v.Add(e); err != nil {
				return conflict("the source's events after seq %d do not append: %v", len(stored)-1, err)
			}
		}
		r.Interrupted = len(session.InterruptedTurnClosers(srcEvents)) > 0
		return r, nil
	}
	if err := st.Append(ctx, id, int64(len(stored)), grown); err != nil {
		var ve *session.ValidationError
		if errors.As(err, &ve) || dsherr.CodeOf(err) == dsherr.StaleWriter {
			return conflict("the source's events after seq %d do not append: %v", len(stored)-1, err)
		}
		return r, err
	}
	return r, w.checkpoint(ctx, st, &dshformat.Session{Header: s.Header, Events: srcEvents, Location: s.Location}, &r)
}

// sameAsFound compares a stored log that cannot be appended to (or a source
// log that cannot be appended) with the source's, as found: "" when they
// are the same, else what differs.
func sameAsFound(a *backend.AuditRead, s *dshformat.Session) string {
	switch {
	case (a.Damaged != nil) != (s.Damage != nil):
		return "one of them is damaged inside its committed region"
	case a.Damaged != nil:
		// The store keeps the seq a reader reports the damage at
		// (damagedLog), which for a schema-17 row is its physical seq.
		if a.Damaged.FromSeq != s.Damage.Seq() || !bytes.Equal(a.Damaged.Raw, s.Damage.Raw) || !sameEvents(a.Prefix, s.Events) {
			return "the damaged logs differ"
		}
		return ""
	case (a.Torn != nil) != (s.Torn != nil):
		return "one of them has a torn tail"
	case a.Torn != nil && (a.Torn.FromSeq != s.Torn.FromSeq || !bytes.Equal(a.Torn.Raw, s.Torn.Raw)):
		return "the torn tails differ"
	}
	if normalized, err := session.NormalizeLegacy(s.Header.ID, s.Events); !sameEvents(a.Events, s.Events) && (err != nil || !sameEvents(a.Events, normalized)) {
		return "the events differ"
	}
	return ""
}

func sameEvents(a, b []session.Event) bool {
	return slices.EqualFunc(a, b, sameEvent)
}

// sameEvent compares two events field by field, raw JSON byte for byte.
func sameEvent(a, b session.Event) bool {
	return a.Type == b.Type && a.Seq == b.Seq && a.Time == b.Time && bytes.Equal(a.Data, b.Data) &&
		a.HasSourceEventSeqs == b.HasSourceEventSeqs && slices.Equal(a.SourceEventSeqs, b.SourceEventSeqs) &&
		bytes.Equal(a.SurfaceOp, b.SurfaceOp) && a.Ignorable == b.Ignorable && slices.Equal(a.UnknownKeys, b.UnknownKeys)
}

// write imports one session through dst: the batch's transaction (each
// session in a savepoint of its own), or the store itself in a dry run.
func (w *importer) write(ctx context.Context, dst Destination, listed session.Header, s *dshformat.Session) (Result, error) {
	r := Result{ID: s.Header.ID, Location: s.Location, Outcome: Imported, Events: len(s.Events), TextReplaced: s.TextReplaced}
	refuse := func(reason string) Result {
		r.Outcome, r.Reason, r.Events, r.TextReplaced = Unreadable, reason, 0, nil
		r.refusal = &backend.Refusal{Location: s.Location, ID: listed.ID, Code: backend.RefusedHeader, Reason: reason}
		return r
	}
	if s.Header.ID != listed.ID {
		return refuse(fmt.Sprintf("header id changed to %q while importing", s.Header.ID)), nil
	}
	// Text no store can keep (a NUL, bytes that are not UTF-8) refuses
	// this session alone, before any lookup by its id, and a dry run says
	// so too.
	if err := storedlog.CheckStorable(s.Header, s.Events); err != nil {
		return refuse(err.Error()), nil
	}
	var tail *backend.TornTail
	if s.Torn != nil {
		tail = &backend.TornTail{FromSeq: s.Torn.FromSeq, Reason: s.Torn.Reason, Raw: s.Torn.Raw}
	}
	if s.Damage != nil {
		r.Damaged, r.Invalid = true, s.Damage.Reason()
	}
	if w.opts.DryRun {
		if dst != nil {
			stored, err := dst.Header(ctx, s.Header.ID)
			if err == nil {
				// A header kept for a refusal is replaced by the session.
				refused, rerr := dst.RefusedOnly(ctx, s.Header.ID)
				if rerr != nil {
					return r, rerr
				}
				if refused {
					err = backend.ErrNotFound
				}
			}
			if err == nil {
				if r = judgeExisting(stored, s.Header); r.Outcome == Conflict {
					return r, nil
				}
				r, err = w.reimport(ctx, dst, s, true)
				if r.Outcome == Appended {
					r.TextReplaced = s.TextReplaced
				}
				return r, err
			} else if !errors.Is(err, backend.ErrNotFound) {
				return r, err
			}
		}
		r.Torn = tail
		judgeInMemory(&r, s)
		return r, nil
	}
	err := dst.Update(ctx, func(tx backend.Store) error {
		// What the store recorded of an earlier refusal of this session,
		// or of this file, is void now that it reads: a header kept for
		// the refusal gives way to the session.
		if w.refusalsHeld {
			if err := tx.ClearRefusals(ctx, s.Location, s.Header.ID); err != nil {
				return err
			}
		}
		// Checked in the batch's transaction (lookAhead): another writer
		// may have stored the id since prepare looked.
		stored, err := w.storedHeader(ctx, tx, s.Header.ID)
		if err == nil {
			if r = judgeExisting(stored, s.Header); r.Outcome == Conflict {
				return nil
			}
			if r, err = w.reimport(ctx, tx, s, false); err != nil || r.Outcome != Appended {
				return err
			}
			// The stored log now is the source's, as read: what its
			// reader replaced is recorded, and a clean read clears an
			// earlier record.
			r.TextReplaced = s.TextReplaced
			return recordTextReplaced(ctx, tx, s.Header.ID, s.TextReplaced)
		}
		if !errors.Is(err, backend.ErrNotFound) {
			return err
		}
		var res backend.ImportResult
		if s.Damage != nil {
			res, err = tx.ImportDamagedSession(ctx, s.Header, s.Events, damagedLog(s.Damage))
		} else {
			res, err = tx.ImportSession(ctx, s.Header, s.Events, tail)
		}
		if dsherr.CodeOf(err) == dsherr.InvalidInput {
			r = refuse(err.Error())
			return nil
		}
		if err != nil {
			return err
		}
		if s.Format != "" {
			if err := tx.SetSourceFormat(ctx, s.Header.ID, s.Format); err != nil {
				return err
			}
		}
		r.Events, r.Torn = res.Events, res.Torn
		if s.TextReplaced != nil {
			if err := recordTextReplaced(ctx, tx, s.Header.ID, s.TextReplaced); err != nil {
				return err
			}
		}
		if s.Damage != nil {
			return nil
		}
		if res.Invalid != nil {
			r.Invalid = res.Invalid.Error()
			return nil
		}
		return w.checkpoint(ctx, tx, s, &r)
	})
	if err != nil {
		return r, fmt.Errorf("import session %q: %w", s.Header.ID, err)
	}
	return r, nil
}

// recordTextReplaced records in the store, in the transaction that stored
// or appended the log, which events the source's reader read from text
// that is not UTF-8 (nil clears the record).
func recordTextReplaced(ctx context.Context, tx backend.Store, id string, t *backend.TextReplaced) error {
	return tx.RecordTextReplaced(ctx, id, t)
}

// checkpoint notes an interrupted turn in a log that reads back, and writes
// the projection checkpoint of its fold. The store read the log back while
// importing it and found it valid, so the events it holds are the source's,
// up to a torn tail.
func (w *importer) checkpoint(ctx context.Context, tx backend.Store, s *dshformat.Session, r *Result) error {
	events := s.Events
	if r.Torn != nil && r.Torn.FromSeq < int64(len(events)) {
		events = events[:r.Torn.FromSeq]
	}
	events, err := session.NormalizeLegacy(s.Header.ID, events)
	if err != nil {
		return dsherr.Wrap(dsherr.Internal, err, "session %q was stored as valid but its records do not convert", s.Header.ID)
	}
	r.Interrupted = len(session.InterruptedTurnClosers(events)) > 0
	if w.opts.NoCheckpoints {
		return nil
	}
	fold := w.units.NewFold()
	fold.Apply(events...)
	// The fold is of the log as just stored, in this transaction: recorded
	// beside it (a unit's failure included), a listing resolves this child
	// without reading its log, forks and identity-less children included.
	if err := subagent.RecordRegistryFold(ctx, tx, w.units, s.Header.ID, fold); err != nil {
		return err
	}
	cp, err := fold.Checkpoint()
	if err != nil {
		// A unit that fails on this log leaves it without a checkpoint;
		// a listing reports the failure from the fold recorded above.
		return nil
	}
	if err := projcache.NewCache(tx, w.units).Put(ctx, s.Header, fold.AsOfSeq(), cp); err != nil {
		return err
	}
	r.Checkpointed = true
	return nil
}

// damagedLog is how the store keeps a source's damage.
func damagedLog(d *dshformat.Damage) backend.DamagedLog {
	return backend.DamagedLog{FromSeq: d.Seq(), Reason: d.Reason(), Encoding: string(d.Encoding), Raw: d.Raw}
}

// judgeInMemory fills what an import would keep as found, without a store:
// the verdict DSH's inspect gives the log and whether it ends inside a turn.
func judgeInMemory(r *Result, s *dshformat.Session) {
	if s.Damage != nil {
		return
	}
	events, err := session.NormalizeLegacy(s.Header.ID, s.Events)
	if err == nil {
		err = session.ValidateLog(s.Header, events)
	}
	if err != nil {
		r.Invalid = fmt.Sprintf("session %q failed validation: %v", s.Header.ID, err)
		return
	}
	r.Interrupted = len(session.InterruptedTurnClosers(events)) > 0
}

// witnessDiff names the first lifecycle witness field that differs, "" when
// none does.
func witnessDiff(a, b session.Witness) string {
	switch {
	case a.Version != b.Version:
		return "version"
	case a.ID != b.ID:
		return "id"
	case a.CreatedAt != b.CreatedAt:
		return "createdAt"
	case a.Cwd != b.Cwd:
		return "cwd"
	case a.ParentSession != b.ParentSession:
		return "parentSession"
	case a.IsSeeded != b.IsSeeded:
		return "isSeeded"
	case a.DelegationDepth != b.DelegationDepth:
		return "delegationDepth"
	case a.Origin != b.Origin:
		return "origin"
	case a.AgentPreset != b.AgentPreset:
		return "agentPreset"
	}
	return ""
}
