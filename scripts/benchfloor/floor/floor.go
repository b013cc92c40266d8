// Package floor holds the floors of dsh's benchmarks: for each measured
// case, the least a Go program on dsh's driver (modernc.org/sqlite, or pgx
// for PostgreSQL: pg.go) must do to produce the same output from the same
// database. scripts/benchfloor runs them as
// processes (scripts/bench); the go test benchmarks run them in-process
// beside the code they bound.
package floor

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	_ "modernc.org/sqlite" // the driver dsh uses

	"github.com/dsh-project/dsh/internal/jsjson"
)

// Open opens a SQLite database through dsh's driver, read-only or for
// writing (WAL, synchronous FULL, as dsh writes).
func Open(path string, readOnly bool) (*sql.DB, error) {
	q := url.Values{}
	if readOnly {
		q.Set("mode", "ro")
		q.Add("_pragma", "query_only(1)")
	} else {
		q.Add("_pragma", "journal_mode(WAL)")
		q.Add("_pragma", "synchronous(FULL)")
		q.Add("_pragma", "foreign_keys(ON)")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs), RawQuery: q.Encode()}
	db, err := sql.Open("sqlite", u.String())
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	return db, nil
}

// entry is one listing row as DSH's SubagentListEntry.
type entry struct {
	id, parent  string
	createdAt   int64
	kind        string // child or diagnostic
	mode        string // child: mode; diagnostic: reason
	label       *string
	hasChildren bool
	subagent    bool
	depth       int
}

func (e *entry) appendJSON(b []byte, placed bool) []byte {
	b = append(b, `{"kind":`...)
	b = jsjson.AppendString(b, e.kind)
	b = append(b, `,"id":`...)
	b = jsjson.AppendString(b, e.id)
	if e.kind == "diagnostic" {
		b = append(b, `,"reason":`...)
		b = jsjson.AppendString(b, e.mode)
	} else {
		b = append(b, `,"mode":`...)
		b = jsjson.AppendString(b, e.mode)
		if e.label != nil {
			b = append(b, `,"label":`...)
			b = jsjson.AppendString(b, *e.label)
		}
		b = append(b, `,"activity":"inactive","hasChildren":`...)
		if e.hasChildren {
			b = append(b, "true"...)
		} else {
			b = append(b, "false"...)
		}
	}
	if placed {
		b = append(b, `,"parentId":`...)
		b = jsjson.AppendString(b, e.parent)
		b = append(b, `,"depth":`...)
		b = jsjson.AppendInt(b, int64(e.depth))
	}
	return append(b, '}')
}

func writeJSON(w io.Writer, entries []*entry, placed bool) error {
	b := []byte{'['}
	for i, e := range entries {
		if i > 0 {
			b = append(b, ',')
		}
		b = e.appendJSON(b, placed)
	}
	_, err := w.Write(append(b, "]\n"...))
	return err
}

// identity is the subagent unit's state as dsh stores it in a checkpoint.
type identity struct {
	Mode  string  `json:"mode"`
	Label *string `json:"label"`
	Seq   int64   `json:"seq"`
}

type checkpointRows struct {
	Subagent *struct {
		Val struct {
			Identity *identity `json:"identity"`
		} `json:"val"`
	} `json:"subagent"`
}

// witnessMatch compares a checkpoint's lifecycle witness with its header in
// SQL (IS: NULL equals NULL).
const witnessMatch = `c.version = s.version AND c.created_at = s.created_at AND c.cwd IS s.cwd
	AND c.parent_session IS s.parent_session AND c.seed_length IS s.seed_length AND c.origin IS s.origin
	AND c.delegation_depth IS s.delegation_depth AND c.agent_preset IS s.agent_preset`

const listColumns = `s.id, s.parent_session, s.created_at, s.seed_length, s.origin IS 'subagent', c.rows,
	EXISTS (SELECT 1 FROM sessions g WHERE g.parent_session = s.id AND g.origin = 'subagent')`

// rowSource is a result set of either driver (database/sql's *sql.Rows and
// pgx's pgx.Rows both are one): the floors read both with the same loop.
type rowSource interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// listQuery is the warm listing's one query in SQLite's dialect: children
// (or, descendants, the whole subtree by one recursive query).
func listQuery(descendants bool) string {
	if descendants {
		return `WITH RECURSIVE tree(id) AS (
			SELECT id FROM sessions WHERE parent_session = ?1
			UNION SELECT s.id FROM sessions s JOIN tree t ON s.parent_session = t.id)
		SELECT ` + listColumns + ` FROM tree JOIN sessions s ON s.id = tree.id
		LEFT JOIN projection_checkpoints c ON c.session_id = s.id AND ` + witnessMatch + `
		ORDER BY s.created_at, s.id`
	}
	return `SELECT ` + listColumns + ` FROM sessions s
		LEFT JOIN projection_checkpoints c ON c.session_id = s.id AND ` + witnessMatch + `
		WHERE s.parent_session = ? AND s.origin = 'subagent'
		ORDER BY s.created_at, s.id`
}

// List is the warm listing floor (descendants: one recursive query).
func List(ctx context.Context, db *sql.DB, parent string, descendants bool, w io.Writer) error {
	rows, err := db.QueryContext(ctx, listQuery(descendants), parent)
	if err != nil {
		return err
	}
	defer rows.Close()
	return listRows(rows, parent, descendants, w)
}

// listRows writes the listing of the warm query's rows.
func listRows(rows rowSource, parent string, descendants bool, w io.Writer) error {
	var entries []*entry
	for rows.Next() {
		var (
			e     entry
			seed  sql.NullInt64
			cp    sql.NullString
			pnull sql.NullString
		)
		if err := rows.Scan(&e.id, &pnull, &e.createdAt, &seed, &e.subagent, &cp, &e.hasChildren); err != nil {
			return err
		}
		e.parent = pnull.String
		e.kind, e.mode = "diagnostic", "unavailable"
		if cp.Valid {
			var r checkpointRows
			if err := json.Unmarshal([]byte(cp.String), &r); err != nil {
				return err
			}
			e.mode = "corrupt"
			if r.Subagent != nil {
				if id := r.Subagent.Val.Identity; id != nil && id.Seq >= seed.Int64 {
					e.kind, e.mode, e.label = "child", id.Mode, id.Label
				}
			}
		}
		entries = append(entries, &e)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if descendants {
		entries = preOrder(entries, parent)
	}
	return writeJSON(w, entries, descendants)
}

// preOrder arranges a subtree's entries (in (created_at, id) order) in
// pre-order below root, with depths, keeping the subagent-origin ones (the
// walk goes through every session).
func preOrder(entries []*entry, root string) []*entry {
	kids := map[string][]*entry{}
	for _, e := range entries {
		kids[e.parent] = append(kids[e.parent], e)
	}
	out := make([]*entry, 0, len(entries))
	var walk func(id string, depth int)
	walk = func(id string, depth int) {
		for _, e := range kids[id] {
			e.depth = depth
			if e.subagent {
				out = append(out, e)
			}
			walk(e.id, depth+1)
		}
	}
	walk(root, 1)
	return out
}

// coldQuery is the cold listing's one query in SQLite's dialect.
const coldQuery = `SELECT s.id, s.created_at, s.seed_length, s.verified, d.seq, d.data,
		EXISTS (SELECT 1 FROM sessions g WHERE g.parent_session = s.id AND g.origin = 'subagent')
		FROM sessions s LEFT JOIN events d ON d.session_id = s.id AND d.type = 'subagent/descriptor'
		WHERE s.parent_session = ? AND s.origin = 'subagent'
		ORDER BY s.created_at, s.id, d.seq`

// Cold is the cold listing floor: identities folded from descriptor events.
func Cold(ctx context.Context, db *sql.DB, parent string, w io.Writer) error {
	rows, err := db.QueryContext(ctx, coldQuery, parent)
	if err != nil {
		return err
	}
	defer rows.Close()
	return coldRows(rows, w)
}

// coldRows writes the listing of the cold query's rows.
func coldRows(rows rowSource, w io.Writer) error {
	var entries []*entry
	var last *entry
	var lastSeed int64
	for rows.Next() {
		var (
			id          string
			createdAt   int64
			seed, seq   sql.NullInt64
			verified    bool
			data        sql.NullString
			hasChildren bool
		)
		if err := rows.Scan(&id, &createdAt, &seed, &verified, &seq, &data, &hasChildren); err != nil {
			return err
		}
		if last == nil || last.id != id {
			last = &entry{id: id, createdAt: createdAt, kind: "diagnostic", mode: "corrupt", hasChildren: hasChildren}
			if !verified {
				last.mode = "unavailable"
			}
			lastSeed = seed.Int64
			entries = append(entries, last)
		}
		if !verified || !data.Valid {
			continue
		}
		var d struct {
			Version int     `json:"version"`
			Mode    string  `json:"mode"`
			Label   *string `json:"label"`
		}
		if json.Unmarshal([]byte(data.String), &d) != nil || d.Version != 2 ||
			(d.Mode != "one-shot" && (d.Mode != "continuable" || d.Label == nil)) {
			last.kind, last.mode, last.label = "diagnostic", "corrupt", nil
			continue
		}
		if seq.Int64 >= lastSeed {
			last.kind, last.mode, last.label = "child", d.Mode, d.Label
		} else {
			last.kind, last.mode, last.label = "diagnostic", "corrupt", nil
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return writeJSON(w, entries, false)
}

// BareLoad fills the bare table from a children listing (dsh list -o json).
func BareLoad(ctx context.Context, db *sql.DB, parent string, r io.Reader) error {
	var listed []struct {
		Kind   string  `json:"kind"`
		ID     string  `json:"id"`
		Mode   string  `json:"mode"`
		Reason string  `json:"reason"`
		Label  *string `json:"label"`
	}
	if err := json.NewDecoder(r).Decode(&listed); err != nil {
		return err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `CREATE TABLE bare (id TEXT PRIMARY KEY, parent TEXT NOT NULL,
		created_at INTEGER NOT NULL, mode TEXT NOT NULL, label TEXT) STRICT;
		CREATE INDEX bare_by_parent ON bare (parent, created_at, id, mode, label)`); err != nil {
		return err
	}
	ins, err := tx.PrepareContext(ctx, `INSERT INTO bare VALUES (?, ?, ?, ?, ?)`)
	if err != nil {
		return err
	}
	for i, e := range listed {
		mode := e.Mode
		if e.Kind == "diagnostic" {
			mode = "!" + e.Reason
		}
		if _, err := ins.ExecContext(ctx, e.ID, parent, i, mode, e.Label); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// Bare reads one parent's rows back from the bare table.
func Bare(ctx context.Context, db *sql.DB, parent string, w io.Writer) error {
	rows, err := db.QueryContext(ctx, `SELECT b.id, b.mode, b.label,
		EXISTS (SELECT 1 FROM bare g WHERE g.parent = b.id)
		FROM bare b WHERE b.parent = ? ORDER BY b.created_at, b.id`, parent)
	if err != nil {
		return err
	}
	defer rows.Close()
	var entries []*entry
	for rows.Next() {
		var e entry
		var label sql.NullString
		if err := rows.Scan(&e.id, &e.mode, &label, &e.hasChildren); err != nil {
			return err
		}
		e.kind = "child"
		if reason, ok := strings.CutPrefix(e.mode, "!"); ok {
			e.kind, e.mode = "diagnostic", reason
		}
		if label.Valid {
			e.label = &label.String
		}
		entries = append(entries, &e)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return writeJSON(w, entries, false)
}

// Diagnose streams every event of every child of parent in one query and
// JSON-parses each event's data (json.Valid: a full parse that builds
// nothing, the least any validation must do).
func Diagnose(ctx context.Context, db *sql.DB, parent string, w io.Writer) error {
	rows, err := db.QueryContext(ctx, `SELECT e.session_id, e.seq, e.type, e.time, e.data, e.source_event_seqs, e.surface_op
		FROM sessions s JOIN events e ON e.session_id = s.id
		WHERE s.parent_session = ? AND s.origin = 'subagent'`, parent) // nested loop: each log whole, in seq order
	if err != nil {
		return err
	}
	defer rows.Close()
	return diagnoseRows(rows, w)
}

// diagnoseRows counts the events of each log (given whole, one after
// another) and the ones whose data is not JSON.
func diagnoseRows(rows rowSource, w io.Writer) error {
	var (
		id, last, typ       string
		seq, at, n, invalid int64
		data, src, op       sql.NullString
	)
	flush := func() {
		if last != "" {
			fmt.Fprintf(w, "%s\t%d\t%d\n", last, n, invalid)
		}
	}
	for rows.Next() {
		if err := rows.Scan(&id, &seq, &typ, &at, &data, &src, &op); err != nil {
			return err
		}
		if id != last {
			flush()
			last, n, invalid = id, 0, 0
		}
		n++
		if data.Valid && !json.Valid([]byte(data.String)) {
			invalid++
		}
	}
	flush()
	return rows.Err()
}

// Import inserts every session.jsonl under dir: its header line into
// sessions, its event lines into events.
func Import(ctx context.Context, db *sql.DB, dir string) error {
	return importFiles(dir, func(files []string) error { return importBatch(ctx, db, files) })
}

// importFiles calls batch with the session.jsonl files under dir, sorted,
// importPerTx at a time.
func importFiles(dir string, batch func(files []string) error) error {
	var files []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == "session.jsonl" {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		return err
	}
	slices.Sort(files)
	for start := 0; start < len(files); start += importPerTx {
		if err := batch(files[start:min(start+importPerTx, len(files))]); err != nil {
			return err
		}
	}
	return nil
}

// importPerTx is how many sessions one import transaction holds.
const importPerTx = 1000

// readLog parses the session.jsonl at path: its header and its events.
func readLog(path string) (header, []event, error) {
	var h header
	text, err := os.ReadFile(path)
	if err != nil {
		return h, nil, err
	}
	lines := bytes.Split(bytes.TrimRight(text, "\n"), []byte("\n"))
	if err := json.Unmarshal(lines[0], &h); err != nil || h.Type != "session" {
		return h, nil, errors.Join(fmt.Errorf("%s: bad header", path), err)
	}
	events := make([]event, 0, len(lines)-1)
	for _, line := range lines[1:] {
		var e event
		if err := json.Unmarshal(line, &e); err != nil {
			return h, nil, fmt.Errorf("%s: %w", path, err)
		}
		events = append(events, e)
	}
	return h, events, nil
}

type header struct {
	Type            string  `json:"type"`
	Version         int64   `json:"version"`
	ID              string  `json:"id"`
	CreatedAt       int64   `json:"createdAt"`
	Cwd             *string `json:"cwd"`
	ParentSession   *string `json:"parentSession"`
	SeedLength      *int64  `json:"seedLength"`
	Origin          *string `json:"origin"`
	DelegationDepth *int64  `json:"delegationDepth"`
	AgentPreset     *string `json:"agentPreset"`
}

type event struct {
	Type            string          `json:"type"`
	Seq             int64           `json:"seq"`
	Time            int64           `json:"time"`
	Data            json.RawMessage `json:"data"`
	SourceEventSeqs json.RawMessage `json:"sourceEventSeqs"`
	SurfaceOp       json.RawMessage `json:"surfaceOp"`
	Ignorable       bool            `json:"ignorable"`
}

func importBatch(ctx context.Context, db *sql.DB, files []string) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	insSession, err := tx.PrepareContext(ctx, `INSERT INTO sessions (id, version, created_at, cwd, parent_session,
		seed_length, origin, delegation_depth, agent_preset, next_seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return err
	}
	insEvent, err := tx.PrepareContext(ctx, `INSERT INTO events (session_id, seq, type, time, data,
		source_event_seqs, surface_op, ignorable) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return err
	}
	for _, path := range files {
		h, events, err := readLog(path)
		if err != nil {
			return err
		}
		if _, err := insSession.ExecContext(ctx, h.ID, h.Version, h.CreatedAt, h.Cwd, h.ParentSession,
			h.SeedLength, h.Origin, h.DelegationDepth, h.AgentPreset, len(events)); err != nil {
			return err
		}
		for _, e := range events {
			if _, err := insEvent.ExecContext(ctx, h.ID, e.Seq, e.Type, e.Time, rawOrNil(e.Data),
				rawOrNil(e.SourceEventSeqs), rawOrNil(e.SurfaceOp), e.Ignorable); err != nil {
				return err
			}
		}
	}
	return tx.Commit()
}

func rawOrNil(raw json.RawMessage) any {
	if raw == nil {
		return nil
	}
	return string(raw)
}
