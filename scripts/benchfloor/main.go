// Command benchfloor is the floor of every case scripts/bench measures: the
// least a Go program on dsh's own SQLite driver (modernc.org/sqlite) must do
// to produce the same output from the same database. dsh's time over the
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
//	benchfloor measure OUT -- CMD [ARGS...]
//	    runs CMD with its stdout to OUT and prints its wall time and CPU
//	    time (user + system, from rusage) in microseconds and its peak RSS
//	    in KiB. On a shared machine CPU time is the steadier measure.
//	benchfloor import --db NEWDB DIR
//	    every session.jsonl under DIR parsed line by line and its header and
//	    events inserted into NEWDB (an empty dsh store) in large
//	    transactions, one prepared statement per table.
//
// Floors skip what dsh must do beyond producing the bytes (DSH's full
// validation, the ladder's fallbacks, crash safety per session): that gap
// is what the ratio measures.
package main

import (
	"bufio"
	"context"
	"database/sql"
	"flag"
	"fmt"
	"os"

	"github.com/dsh-project/dsh/scripts/benchfloor/floor"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: benchfloor list|cold|bare-load|bare|diagnose|import [flags]")
		os.Exit(2)
	}
	cmd, args := os.Args[1], os.Args[2:]
	if cmd == "measure" {
		os.Exit(measure(args))
	}
	fl := flag.NewFlagSet(cmd, flag.ExitOnError)
	dbPath := fl.String("db", "", "dsh store")
	barePath := fl.String("bare", "", "bare table database")
	parent := fl.String("parent", "bench-parent", "parent session")
	scope := fl.String("scope", "children", "children or descendants")
	fl.Parse(args)
	ctx := context.Background()
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
	switch cmd {
	case "list":
		err = floor.List(ctx, open(*dbPath, true), *parent, *scope == "descendants", out)
	case "cold":
		err = floor.Cold(ctx, open(*dbPath, true), *parent, out)
	case "bare-load":
		err = floor.BareLoad(ctx, open(*barePath, false), *parent, os.Stdin)
	case "bare":
		err = floor.Bare(ctx, open(*barePath, true), *parent, out)
	case "diagnose":
		err = floor.Diagnose(ctx, open(*dbPath, true), *parent, out)
	case "import":
		err = floor.Import(ctx, open(*dbPath, false), fl.Arg(0))
	default:
		err = fmt.Errorf("unknown case %q", cmd)
	}
	if err == nil {
		err = out.Flush()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchfloor:", err)
		os.Exit(1)
	}
}
