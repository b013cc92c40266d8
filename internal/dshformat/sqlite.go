package dshformat

import (
	"context"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/dsh-project/dsh/internal/boundedfile"
	"github.com/dsh-project/dsh/internal/jsjson"
	"github.com/dsh-project/dsh/internal/session"
	"github.com/dsh-project/dsh/internal/sqliteread"
)

// DSH's opt-in SQLite persistence, schema 17 (storage-formats §3).
const (
	dshApplicationID = 1146308688 // "DSHP"
	// dshDatabaseApplicationID marks a dsh database ("DSH1",
	// sqlitepersist.ApplicationID): read with --db, not as DSH's store.
	dshDatabaseApplicationID = 0x44534831
	dshSchemaVersion         = 17
)

// dshSchema is the sql of each schema object with whitespace runs
// collapsed, as DSH compares them. A store whose objects differ is not one
// dsh knows how to read.
var dshSchema = map[string]string{
	"persistence_state": "CREATE TABLE persistence_state ( singleton INTEGER PRIMARY KEY CHECK (singleton = 1), store_id TEXT NOT NULL ) STRICT",
	"sessions":          "CREATE TABLE sessions ( id TEXT PRIMARY KEY, version INTEGER NOT NULL, created_at INTEGER NOT NULL, cwd TEXT, parent_session TEXT, seed_length INTEGER, origin TEXT, delegation_depth INTEGER, agent_preset TEXT, incarnation TEXT NOT NULL, revision INTEGER NOT NULL ) STRICT",
	"events":            "CREATE TABLE events ( session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE, seq INTEGER NOT NULL, type TEXT NOT NULL, time INTEGER NOT NULL, data ANY NOT NULL, source_event_seqs ANY, surface_op TEXT, ignorable INTEGER CHECK (ignorable IS NULL OR ignorable IN (0, 1)), PRIMARY KEY (session_id, seq) ) STRICT",
}

var uuidPattern = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[1-8][0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}$`)

type sqliteSource struct {
	path     string
	db       *sql.DB
	headers  []session.Header
	problems []Problem
	ids      map[string]bool // sessions offered by Headers
}

// OpenDSHSQLite opens DSH's schema-17 SQLite store read-only. Nothing is
// ever written, beside the store either: the file is opened as package
// sqliteread decides (immutable=1 when no -wal or -shm lies beside it, the
// -shm index mapped read-only when there is one, so that committed
// transactions still in a -wal are read without touching the index). The store
// must carry DSH's application_id and user_version 17 — any other schema
// version is refused with *UnsupportedVersionError — and exactly DSH's
// schema objects. Session rows that fail DSH's metadata checks are
// reported by Problems (DSH would fail the whole listing).
func OpenDSHSQLite(ctx context.Context, path string) (Source, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	info, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("open DSH SQLite store: %w", err)
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("open DSH SQLite store: %w", boundedfile.NotRegular(path, info.Mode()))
	}
	query := url.Values{"_pragma": {"query_only(1)", "trusted_schema(0)"}}
	if err := sqliteread.Query(abs, query); err != nil {
		return nil, fmt.Errorf("open DSH SQLite store %s: %w", path, err)
	}
	dsn := (&url.URL{Scheme: "file", Path: abs, RawQuery: query.Encode()}).String()
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open DSH SQLite store %s: %w", path, err)
	}
	src := &sqliteSource{path: path, db: db, ids: make(map[string]bool)}
	if err := src.checkStore(ctx); err != nil {
		db.Close()
		return nil, err
	}
	if err := src.loadHeaders(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return src, nil
}

// checkStore applies DSH's ownership checks: application id, schema
// version, schema objects, store identity.
func (s *sqliteSource) checkStore(ctx context.Context) error {
	var userVersion, appID int64
	if err := s.db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&userVersion); err != nil {
		return fmt.Errorf("open DSH SQLite store %s: %w", s.path, err)
	}
	if err := s.db.QueryRowContext(ctx, "PRAGMA application_id").Scan(&appID); err != nil {
		return fmt.Errorf("open DSH SQLite store %s: %w", s.path, err)
	}
	notDSH := func(format string, args ...any) error {
		return corruptAt(s.path, "", "not a DSH session store: "+fmt.Sprintf(format, args...), nil)
	}
	if appID == dshDatabaseApplicationID {
		return notDSH("it is a dsh database; read it in place with --source dsh:%s (or --db %s)", s.path, s.path)
	}
	if appID != dshApplicationID {
		return notDSH("application id %d, expected %d", appID, dshApplicationID)
	}
	if userVersion != dshSchemaVersion {
		return &UnsupportedVersionError{Path: s.path, Version: strconv.FormatInt(userVersion, 10),
			Detail: fmt.Sprintf("SQLite user_version %d; dsh reads schema %d", userVersion, dshSchemaVersion)}
	}
	rows, err := s.db.QueryContext(ctx, "SELECT type, name, tbl_name, sql FROM sqlite_schema WHERE name NOT GLOB 'sqlite_*' ORDER BY type, name")
	if err != nil {
		return fmt.Errorf("open DSH SQLite store %s: %w", s.path, err)
	}
	defer rows.Close()
	seen := 0
	for rows.Next() {
		var typ, name, table string
		var text sql.NullString
		if err := rows.Scan(&typ, &name, &table, &text); err != nil {
			return fmt.Errorf("open DSH SQLite store %s: %w", s.path, err)
		}
		want, known := dshSchema[name]
		if typ != "table" || !known || table != name || strings.Join(strings.Fields(text.String), " ") != want {
			return notDSH("does not contain the required schema objects (%s %q differs)", typ, name)
		}
		seen++
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("open DSH SQLite store %s: %w", s.path, err)
	}
	if seen != len(dshSchema) {
		return notDSH("does not contain the required schema objects")
	}
	var storeID sql.NullString
	err = s.db.QueryRowContext(ctx, "SELECT store_id FROM persistence_state WHERE singleton = 1").Scan(&storeID)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && !uuidPattern.MatchString(storeID.String)) {
		return notDSH("has no valid store identity")
	}
	if err != nil {
		return fmt.Errorf("open DSH SQLite store %s: %w", s.path, err)
	}
	return nil
}

// sessionRow is a sessions row as stored.
type sessionRow struct {
	id, version, createdAt, cwd, parent, seedLength, origin, depth, preset, incarnation, revision any
}

const sessionColumns = "id, version, created_at, cwd, parent_session, seed_length, origin, delegation_depth, agent_preset, incarnation, revision"

func (r *sessionRow) dest() []any {
	return []any{&r.id, &r.version, &r.createdAt, &r.cwd, &r.parent, &r.seedLength, &r.origin, &r.depth, &r.preset, &r.incarnation, &r.revision}
}

func (s *sqliteSource) loadHeaders(ctx context.Context) error {
	rows, err := s.db.QueryContext(ctx, "SELECT "+sessionColumns+" FROM sessions")
	if err != nil {
		return fmt.Errorf("read DSH SQLite store %s: %w", s.path, err)
	}
	defer rows.Close()
	for rows.Next() {
		var r sessionRow
		if err := rows.Scan(r.dest()...); err != nil {
			return fmt.Errorf("read DSH SQLite store %s: %w", s.path, err)
		}
		h, err := s.headerOf(r)
		if err != nil {
			s.problems = append(s.problems, Problem{Path: s.path, ID: h.ID, Err: err})
			continue
		}
		s.headers = append(s.headers, h)
		s.ids[h.ID] = true
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read DSH SQLite store %s: %w", s.path, err)
	}
	sort.Slice(s.headers, func(i, j int) bool { return s.headers[i].ID < s.headers[j].ID })
	return s.loadHeaderless(ctx)
}

// loadHeaderless reports the logs whose sessions row is missing (events
// rows naming a session the sessions table does not hold): a session whose
// header cannot be read, which no listing shows, is still reported.
func (s *sqliteSource) loadHeaderless(ctx context.Context) error {
	rows, err := s.db.QueryContext(ctx, "SELECT DISTINCT session_id FROM events WHERE session_id NOT IN (SELECT id FROM sessions) ORDER BY session_id")
	if err != nil {
		return fmt.Errorf("read DSH SQLite store %s: %w", s.path, err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return fmt.Errorf("read DSH SQLite store %s: %w", s.path, err)
		}
		s.problems = append(s.problems, Problem{Path: s.path, ID: id,
			Err: corruptAt(s.path, id, "events rows without a sessions row: the session's header is missing", nil)})
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read DSH SQLite store %s: %w", s.path, err)
	}
	return nil
}

// headerOf maps a sessions row to a header with DSH's read validation. A
// row with version other than 0 is returned without error: it lists, and
// Read refuses it. h.ID is set whenever the id itself is readable.
func (s *sqliteSource) headerOf(r sessionRow) (h session.Header, err error) {
	id, ok := r.id.(string)
	if !ok || id == "" {
		return h, corruptAt(s.path, "", "sessions row has an invalid id", nil)
	}
	h.ID = id
	bad := func(what string) (session.Header, error) {
		return h, corruptAt(s.path, id, "invalid sessions row: "+what, nil)
	}
	optString := func(v any) (*string, bool) {
		switch t := v.(type) {
		case nil:
			return nil, true
		case string:
			return &t, true
		}
		return nil, false
	}
	optCount := func(v any) (*int64, bool) {
		switch t := v.(type) {
		case nil:
			return nil, true
		case int64:
			return &t, t >= 0 && t <= jsjson.MaxSafeInteger
		}
		return nil, false
	}
	if h.Version, ok = r.version.(int64); !ok || h.Version > jsjson.MaxSafeInteger || h.Version < -jsjson.MaxSafeInteger {
		return bad("version is not a safe integer")
	}
	if h.CreatedAt, ok = r.createdAt.(int64); !ok || h.CreatedAt < 0 || h.CreatedAt > jsjson.MaxSafeInteger {
		return bad("created_at is not a non-negative safe integer")
	}
	if rev, ok := r.revision.(int64); !ok || rev < 0 || rev > jsjson.MaxSafeInteger {
		return bad("revision is not a non-negative safe integer")
	}
	if h.Cwd, ok = optString(r.cwd); !ok || (h.Cwd != nil && !strings.HasPrefix(*h.Cwd, "/")) {
		return bad("cwd is not an absolute path")
	}
	if h.Origin, ok = optString(r.origin); !ok || (h.Origin != nil && *h.Origin != session.OriginSubagent) {
		return bad(`origin is not "subagent"`)
	}
	if inc, ok := r.incarnation.(string); !ok || !uuidPattern.MatchString(inc) {
		return bad("incarnation is not a UUID")
	}
	if h.SeedLength, ok = optCount(r.seedLength); !ok {
		return bad("seed_length is not a non-negative safe integer")
	}
	if h.DelegationDepth, ok = optCount(r.depth); !ok {
		return bad("delegation_depth is not a non-negative safe integer")
	}
	if h.ParentSession, ok = optString(r.parent); !ok {
		return bad("parent_session is not a string")
	}
	if h.AgentPreset, ok = optString(r.preset); !ok {
		return bad("agent_preset is not a string")
	}
	return h, nil
}

// HeaderIndex lends the headers Headers returns by position, without
// copying them.
func (s *sqliteSource) HeaderIndex(ctx context.Context) (int, func(int) session.Header, error) {
	return len(s.headers), func(i int) session.Header { return s.headers[i] }, ctx.Err()
}

func (s *sqliteSource) Headers(ctx context.Context) ([]session.Header, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return append([]session.Header(nil), s.headers...), nil
}

func (s *sqliteSource) Problems() []Problem { return append([]Problem(nil), s.problems...) }

func (s *sqliteSource) Close() error { return s.db.Close() }

// Read reads the session row and every events row in one read
// transaction, decodes and expands the rows and applies DSH's scanRows
// torn-tail rule (§3.9).
func (s *sqliteSource) Read(ctx context.Context, id string) (*Session, error) {
	return refuseDamage(s.ReadAsFound(ctx, id))
}

func (s *sqliteSource) ReadAsFound(ctx context.Context, id string) (*Session, error) {
	if !s.ids[id] {
		for _, p := range s.problems {
			if p.ID == id {
				return nil, p.Err
			}
		}
		return nil, fmt.Errorf("%s: session %q: %w", s.path, id, ErrNotFound)
	}
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("read DSH SQLite store %s: %w", s.path, err)
	}
	defer tx.Rollback()
	var r sessionRow
	err = tx.QueryRowContext(ctx, "SELECT "+sessionColumns+" FROM sessions WHERE id = ?", id).Scan(r.dest()...)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%s: session %q: %w", s.path, id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("read DSH SQLite store %s: %w", s.path, err)
	}
	h, err := s.headerOf(r)
	if err != nil {
		return nil, err
	}
	if h.Version != session.FormatVersion {
		return nil, &UnsupportedVersionError{Path: s.path, Session: id, Version: strconv.FormatInt(h.Version, 10), Detail: "sessions.version"}
	}
	rows, err := s.readRows(ctx, tx, id)
	if err != nil {
		return nil, err
	}
	sess := &Session{Header: h, Location: s.path, Format: FormatDSHSQLite}
	if err := s.scanRows(id, rows, sess); err != nil {
		return nil, err
	}
	return sess, nil
}

// physicalRow is one events row as stored.
type physicalRow struct {
	seq       int64
	typ       string
	time      int64
	data      any // string (TEXT) or []byte (zstd BLOB)
	seqs      any // nil or []byte
	surfaceOp sql.NullString
	ignorable sql.NullInt64
	// bad is why the row fails DSH's primitive checks, which fail the
	// whole read wherever the row is.
	bad error
}

// readRows reads every events row of a session, applying DSH's primitive
// checks: a row that fails them makes the whole read fail (it is not a torn
// tail); it is marked bad for scanRows.
func (s *sqliteSource) readRows(ctx context.Context, tx *sql.Tx, id string) ([]physicalRow, error) {
	q, err := tx.QueryContext(ctx, `SELECT seq, type, time, data, typeof(data), source_event_seqs, typeof(source_event_seqs), surface_op, ignorable
		FROM events WHERE session_id = ? ORDER BY seq`, id)
	if err != nil {
		return nil, fmt.Errorf("read DSH SQLite store %s: %w", s.path, err)
	}
	defer q.Close()
	var out []physicalRow
	for q.Next() {
		var r physicalRow
		var dataType, seqsType string
		if err := q.Scan(&r.seq, &r.typ, &r.time, &r.data, &dataType, &r.seqs, &seqsType, &r.surfaceOp, &r.ignorable); err != nil {
			return nil, fmt.Errorf("read DSH SQLite store %s: %w", s.path, err)
		}
		switch {
		case r.seq < 0 || r.seq > jsjson.MaxSafeInteger:
			r.bad = errors.New("seq is not a non-negative safe integer")
		case r.typ == "":
			r.bad = errors.New("type is empty")
		case r.time > jsjson.MaxSafeInteger || r.time < -jsjson.MaxSafeInteger:
			r.bad = errors.New("time is not a safe integer")
		case dataType != "text" && dataType != "blob":
			r.bad = errors.New("data is " + dataType + ", not TEXT or BLOB")
		case seqsType != "null" && seqsType != "blob":
			r.bad = errors.New("source_event_seqs is " + seqsType + ", not BLOB or NULL")
		case r.ignorable.Valid && r.ignorable.Int64 != 0 && r.ignorable.Int64 != 1:
			r.bad = errors.New("ignorable is not NULL, 0 or 1")
		}
		if seqsType == "blob" {
			if b, _ := r.seqs.([]byte); b == nil {
				r.seqs = []byte{} // a zero-length BLOB is the empty list, not NULL
			}
		}
		out = append(out, r)
		if len(out)%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
	}
	if err := q.Err(); err != nil {
		return nil, fmt.Errorf("read DSH SQLite store %s: %w", s.path, err)
	}
	return out, nil
}

// decodedRow is a physical row decoded into its logical events.
type decodedRow struct {
	events  []session.Event
	err     error
	turnEnd bool
	// replaced: a TEXT column of the row (data, surface_op) was not
	// UTF-8 and was read with U+FFFD in place of its ill-formed bytes.
	replaced bool
}

// decodeRow decodes one physical row: ignorable = 0 marks a packed chunk
// row, anything else is one logical event.
func decodeRow(r physicalRow, budget int) decodedRow {
	if r.ignorable.Valid && r.ignorable.Int64 == 0 {
		kind, ok := rowKindOf(r.typ)
		if !ok {
			return decodedRow{err: errors.New("packed discriminator requires a chunk tag")}
		}
		if r.seqs != nil || r.surfaceOp.Valid {
			return decodedRow{err: errors.New("packed surface fields must be null")}
		}
		// DSH caps a packed row's data at 1 MiB: beyond it the row is
		// malformed, not too large for dsh.
		text, err := decodeRowData(r.data, true)
		if err != nil {
			return decodedRow{err: rowError(kind, "%v", err)}
		}
		if len(text) > sqliteMaxRowBytes {
			return decodedRow{err: rowError(kind, "data is %d bytes, more than %d", len(text), sqliteMaxRowBytes)}
		}
		lim := sqliteRowLimits
		lim.maxBytes = budget
		events, err := expandRow(kind, r.seq, r.time, text, lim)
		return decodedRow{events: events, err: err, replaced: !validText(r.data)}
	}
	text, err := decodeRowData(r.data, false)
	if err != nil {
		return decodedRow{err: err}
	}
	data, canonical, err := jsjson.ParseValue(text)
	if err != nil {
		return decodedRow{err: fmt.Errorf("data: %w", err)}
	}
	e := session.Event{Type: r.typ, Seq: r.seq, Time: r.time, Data: jsjson.Canonical(data, canonical), Ignorable: r.ignorable.Valid && r.ignorable.Int64 == 1}
	if r.seqs != nil {
		if e.SourceEventSeqs, err = decodeSeqBlob(r.seqs.([]byte)); err != nil {
			return decodedRow{err: fmt.Errorf("source_event_seqs: %w", err)}
		}
		e.HasSourceEventSeqs = true
	}
	if r.surfaceOp.Valid {
		op, canonical, err := jsjson.ParseValue(jsjson.WellFormedUTF8([]byte(r.surfaceOp.String)))
		if err != nil {
			return decodedRow{err: fmt.Errorf("surface_op: %w", err)}
		}
		e.SurfaceOp = jsjson.Canonical(op, canonical)
	}
	replaced := !validText(r.data) || (r.surfaceOp.Valid && !utf8.ValidString(r.surfaceOp.String))
	return decodedRow{events: []session.Event{e}, turnEnd: r.typ == session.TypeTurnEnd, replaced: replaced}
}

// validText is false for a TEXT data column holding bytes that are not
// UTF-8, which the reader replaces; a BLOB's text that is not UTF-8 is
// refused instead (decodeRowData).
func validText(data any) bool {
	d, ok := data.(string)
	return !ok || utf8.ValidString(d)
}

// decodeRowData returns the JSON text of a data column: TEXT as stored, a
// BLOB zstd-decompressed and strictly UTF-8 (packed rows capped at 1 MiB of
// output).
func decodeRowData(v any, packed bool) ([]byte, error) {
	switch d := v.(type) {
	case string:
		return jsjson.WellFormedUTF8([]byte(d)), nil
	case []byte:
		limit := maxLineText
		if packed {
			limit = sqliteMaxRowBytes
		}
		text, err := decodeCapped(d, limit)
		if err != nil {
			return nil, fmt.Errorf("zstd data: %w", err)
		}
		if !utf8.Valid(text) {
			return nil, errors.New("zstd data is not valid UTF-8")
		}
		return text, nil
	}
	return nil, fmt.Errorf("data has unexpected type %T", v)
}

// scanRows applies DSH's torn-tail rule: a row that fails to decode or
// breaks contiguity starts the torn tail, unless a later row decodes and
// holds a turn/end — then it is committed damage, kept in sess.Damage with
// the rows from the damaged one on. A row failing the primitive checks is
// damage wherever it is, from the first problem row on.
func (s *sqliteSource) scanRows(id string, rows []physicalRow, sess *Session) error {
	decoded := make([]decodedRow, len(rows))
	lastTurnEnd := -1
	budget := maxLogText
	for i, r := range rows {
		if r.bad != nil {
			lastTurnEnd = len(rows)
			decoded[i] = decodedRow{err: fmt.Errorf("invalid events row: %w", r.bad)}
			continue
		}
		decoded[i] = decodeRow(r, budget)
		d := decoded[i]
		if errors.Is(d.err, errTooLarge) {
			e := corruptAt(s.path, id, "session exceeds dsh's size limit", d.err)
			e.Seq = r.seq
			return e
		}
		if d.err == nil && d.turnEnd {
			lastTurnEnd = i
		}
		for _, e := range d.events {
			budget -= len(e.Data)
		}
	}
	var events []session.Event
	var replaced replacedText
	defer func() { sess.TextReplaced = replaced.r }()
	for i, d := range decoded {
		expected := int64(len(events))
		problem := d.err
		if problem == nil && d.events[0].Seq != expected {
			problem = fmt.Errorf("row starts at seq %d, expected %d", d.events[0].Seq, expected)
		}
		if problem == nil {
			if d.replaced {
				replaced.note(expected, len(d.events))
			}
			events = append(events, d.events...)
			continue
		}
		if i <= lastTurnEnd {
			e := corruptAt(s.path, id, fmt.Sprintf("corrupt session log: invalid committed physical row at seq %d", rows[i].seq), problem)
			e.Seq = rows[i].seq
			sess.Events = events
			sess.Damage = &Damage{FromSeq: expected, Err: e, Raw: encodeTornRows(rows[i:]), Encoding: RawSQLiteRows}
			return nil
		}
		sess.Torn = &Torn{
			FromSeq: expected,
			Marker:  rows[i].seq,
			Reason:  fmt.Sprintf("physical row at seq %d: %v", rows[i].seq, problem),
			Raw:     encodeTornRows(rows[i:]),
		}
		break
	}
	sess.Events = events
	return nil
}

// encodeTornRows keeps torn rows as found, one JSON object per line:
// {"seq","type","time", "data" (TEXT) or "dataZstd" (BLOB, base64),
// "sourceEventSeqs" (base64, when not NULL), "surfaceOp" (when not NULL),
// "ignorable" (when not NULL)}.
func encodeTornRows(rows []physicalRow) []byte {
	var b []byte
	for _, r := range rows {
		b = append(b, `{"seq":`...)
		b = jsjson.AppendInt(b, r.seq)
		b = append(b, `,"type":`...)
		b = jsjson.AppendString(b, r.typ)
		b = append(b, `,"time":`...)
		b = jsjson.AppendInt(b, r.time)
		switch d := r.data.(type) {
		case string:
			b = append(b, `,"data":`...)
			b = jsjson.AppendString(b, d)
		case []byte:
			b = append(b, `,"dataZstd":`...)
			b = jsjson.AppendString(b, base64.StdEncoding.EncodeToString(d))
		}
		if seqs, ok := r.seqs.([]byte); ok {
			b = append(b, `,"sourceEventSeqs":`...)
			b = jsjson.AppendString(b, base64.StdEncoding.EncodeToString(seqs))
		}
		if r.surfaceOp.Valid {
			b = append(b, `,"surfaceOp":`...)
			b = jsjson.AppendString(b, r.surfaceOp.String)
		}
		if r.ignorable.Valid {
			b = append(b, `,"ignorable":`...)
			b = jsjson.AppendInt(b, r.ignorable.Int64)
		}
		b = append(b, "}\n"...)
	}
	return b
}

func (s *sqliteSource) formatOf(context.Context, string) (string, bool) { return FormatDSHSQLite, true }
