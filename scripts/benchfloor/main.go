// Command benchfloor is the floor of every case scripts/bench measures: the
// least a Go program on dsh's own driver (modernc.org/sqlite for a SQLite
// file, pgx for a postgres:// URL) must do to produce the same output from
// the same database. dsh's time over the
// floor's, both measured as whole processes in the same run, is the "dsh /
// floor" ratio of docs/benchmarks.md.
//
//	benchfloor list  --db DB --parent P [--scope descendants]
//	    warm listing: headers joined with their checkpoint records by the
//	    index range, the lifecycle witness compared in SQL, EXISTS for
//	    hasChildren, the identity taken from the stored checkpoint text,
//	    DSH's JSON out (the same bytes as dsh list -o json on a store whose
//	    children all have a checkpoint or a recorded verdict). Descendants:
//	    one recursive query for the whole tree, pre-order built in memory.
//	benchfloor cold  --db DB --parent P
//	    cold listing: headers joined with their descriptor events (the
//	    partial index), the last descriptor JSON-decoded, the same JSON out.
//	benchfloor bare-load --db DB --bare BARE < listing.json
//	benchfloor bare  --bare BARE --parent P
//	    a bare indexed table holding only (id, parent, created_at, mode,
//	    label), loaded from a listing, and read back as the same JSON.
//	benchfloor diagnose --db DB --parent P
//	    every event of every audited child streamed in one query and each
//	    one's data JSON-parsed; prints a count per session.
//	benchfloor headers --parent P DIR
//	    a listing read in place from a JSONL tree (dsh list --source
//	    jsonl:DIR): the header line of every session file under DIR and
//	    nothing else of it, P's children's ids printed in listing order
//	    (the rows need the children's logs: dsh's bytes are not the floor's).
//	benchfloor measure OUT -- CMD [ARGS...]
//	    runs CMD with its stdout to OUT and prints its wall time and CPU
//	    time (user + system, from rusage) in microseconds and its peak RSS
//	    in KiB. On a shared machine CPU time is the steadier measure.
//	benchfloor import --db NEWDB DIR
//	    every session.jsonl under DIR parsed line by line and its header and
//	    events inserted into NEWDB (an empty dsh store) in large
//	    transactions, one prepared statement per table.
//	benchfloor search --db DB [--limit N] QUERY
//	    dsh search QUERY -n N on a store: the same index asked for every
//	    match's score, the fork cut applied by the sessions' seed length,
//	    the best N kept in dsh's order (score, session, seq) and only their
//	    events read; prints each hit's session, seq, time, type and stored
//	    data (no snippet).
//	benchfloor index-size DB
//	    prints the store's events, the events its search index holds and
//	    the bytes the index takes (SQLite: dbstat pages of its tables and
//	    indexes; PostgreSQL: pg_total_relation_size), tab-separated.
//	benchfloor drop-index DB
//	    drops the triggers on events that keep the search index: an import
//	    into that store then costs what it would without the index.
//
// --db may name a PostgreSQL database (postgres://…): list, cold, diagnose
// and import then run the same queries through pgx (diagnose reads each log
// by a lateral join, import sends each batch's headers and events by COPY).
//
//	benchfloor createdb ADMIN NAME
//	    creates the empty database NAME on the server of the admin URL
//	    ADMIN and prints its URL; benchfloor dropdb ADMIN NAME drops it.
//	benchfloor size DB
//	    prints the store's size on disk in bytes: the SQLite file and its
//	    WAL, or pg_database_size.
//	benchfloor server ADMIN
//	    prints the PostgreSQL server's version (for the report).
//
// Floors skip what dsh must do beyond producing the bytes (DSH's full
// validation, the ladder's fallbacks, crash safety per session): that gap
// is what the ratio measures.
package main

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/dsh-project/dsh/scripts/benchfloor/floor"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: benchfloor list|cold|bare-load|bare|diagnose|import|search|measure|createdb|dropdb|size|index-size|drop-index|headers [flags]")
		os.Exit(2)
	}
	cmd, args := os.Args[1], os.Args[2:]
	ctx := context.Background()
	switch cmd {
	case "measure":
		os.Exit(measure(args))
	case "createdb", "dropdb", "size", "server", "index-size", "drop-index":
		if err := admin(ctx, cmd, args); err != nil {
			fmt.Fprintln(os.Stderr, "benchfloor:", err)
			os.Exit(1)
		}
		return
	}
	fl := flag.NewFlagSet(cmd, flag.ExitOnError)
	dbPath := fl.String("db", "", "dsh store")
	barePath := fl.String("bare", "", "bare table database")
	parent := fl.String("parent", "bench-parent", "parent session")
	scope := fl.String("scope", "children", "children or descendants")
	limit := fl.Int("limit", 20, "search: the most hits")
	fl.Parse(args)
	out := bufio.NewWriterSize(os.Stdout, 1<<16)
	open := func(path string, readOnly bool) *sql.DB {
		db, err := floor.Open(path, readOnly)
		if err != nil {
			fmt.Fprintln(os.Stderr, "benchfloor:", err)
			os.Exit(1)
		}
		return db
	}
	var err error
	switch {
	case cmd == "headers":
		err = floor.Headers(ctx, fl.Arg(0), *parent, out)
	case cmd == "search" && floor.IsPG(*dbPath):
		err = pgSearch(ctx, *dbPath, fl.Arg(0), *limit, out)
	case cmd == "search":
		err = floor.Search(ctx, open(*dbPath, true), fl.Arg(0), *limit, out)
	case floor.IsPG(*dbPath):
		err = pgFloor(ctx, cmd, *dbPath, *parent, *scope == "descendants", fl.Arg(0), out)
	default:
		err = sqliteFloor(ctx, cmd, open, *dbPath, *barePath, *parent, *scope == "descendants", fl.Arg(0), out)
	}
	if err == nil {
		err = out.Flush()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchfloor:", err)
		os.Exit(1)
	}
}

func sqliteFloor(ctx context.Context, cmd string, open func(string, bool) *sql.DB, dbPath, barePath, parent string, descendants bool, dir string, out io.Writer) error {
	switch cmd {
	case "list":
		return floor.List(ctx, open(dbPath, true), parent, descendants, out)
	case "cold":
		return floor.Cold(ctx, open(dbPath, true), parent, out)
	case "bare-load":
		return floor.BareLoad(ctx, open(barePath, false), parent, os.Stdin)
	case "bare":
		return floor.Bare(ctx, open(barePath, true), parent, out)
	case "diagnose":
		return floor.Diagnose(ctx, open(dbPath, true), parent, out)
	case "import":
		return floor.Import(ctx, open(dbPath, false), dir)
	}
	return fmt.Errorf("unknown case %q", cmd)
}

func pgSearch(ctx context.Context, dbURL, query string, limit int, out io.Writer) error {
	conn, err := floor.OpenPG(ctx, dbURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	return floor.PGSearch(ctx, conn, query, limit, out)
}

func pgFloor(ctx context.Context, cmd, dbURL, parent string, descendants bool, dir string, out io.Writer) error {
	conn, err := floor.OpenPG(ctx, dbURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	switch cmd {
	case "list":
		return floor.PGList(ctx, conn, parent, descendants, out)
	case "cold":
		return floor.PGCold(ctx, conn, parent, out)
	case "diagnose":
		return floor.PGDiagnose(ctx, conn, parent, out)
	case "import":
		return floor.PGImport(ctx, conn, dir)
	}
	return fmt.Errorf("no PostgreSQL floor for case %q", cmd)
}

// admin runs createdb, dropdb, size, server, index-size and drop-index.
func admin(ctx context.Context, cmd string, args []string) error {
	switch {
	case (cmd == "index-size" || cmd == "drop-index") && len(args) == 1 && floor.IsPG(args[0]):
		conn, err := floor.OpenPG(ctx, args[0])
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		if cmd == "drop-index" {
			return floor.PGDropIndexTriggers(ctx, conn)
		}
		events, indexed, n, err := floor.PGIndexSize(ctx, conn)
		if err != nil {
			return err
		}
		fmt.Printf("%d\t%d\t%d\n", events, indexed, n)
		return nil
	case (cmd == "index-size" || cmd == "drop-index") && len(args) == 1:
		db, err := floor.Open(args[0], cmd == "index-size")
		if err != nil {
			return err
		}
		defer db.Close()
		if cmd == "drop-index" {
			return floor.DropIndexTriggers(ctx, db)
		}
		events, indexed, n, err := floor.IndexSize(ctx, db)
		if err != nil {
			return err
		}
		fmt.Printf("%d\t%d\t%d\n", events, indexed, n)
		return nil
	case cmd == "size" && len(args) == 1 && floor.IsPG(args[0]):
		conn, err := floor.OpenPG(ctx, args[0])
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		n, err := floor.PGSize(ctx, conn)
		if err != nil {
			return err
		}
		fmt.Println(n)
		return nil
	case cmd == "size" && len(args) == 1:
		var n int64
		for _, suffix := range []string{"", "-wal"} {
			fi, err := os.Stat(args[0] + suffix)
			if err == nil {
				n += fi.Size()
			} else if suffix == "" || !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
		fmt.Println(n)
		return nil
	case cmd == "server" && len(args) == 1:
		conn, err := floor.OpenPG(ctx, args[0])
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		var v string
		if err := conn.QueryRow(ctx, "SHOW server_version").Scan(&v); err != nil {
			return err
		}
		fmt.Println(v)
		return nil
	case cmd == "createdb" && len(args) == 2:
		u, err := floor.CreatePG(ctx, args[0], args[1])
		if err != nil {
			return err
		}
		fmt.Println(u)
		return nil
	case cmd == "dropdb" && len(args) == 2:
		return floor.DropPG(ctx, args[0], args[1])
	}
	return fmt.Errorf("usage: benchfloor createdb|dropdb ADMIN NAME, benchfloor size|index-size|drop-index DB, benchfloor server ADMIN")
}
