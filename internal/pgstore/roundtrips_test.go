package pgstore

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/dsh-project/dsh/internal/debuglog"
	"github.com/dsh-project/dsh/internal/dshformat"
	"github.com/dsh-project/dsh/internal/pgtest"
	"github.com/dsh-project/dsh/internal/transfer"
)

// An import's round trips to the server do not grow with its sessions: a
// batch's sessions' writes (savepoint, header, events, bookkeeping, source
// format, registry fold, checkpoint record) are held back and sent
// together, and which sessions the store holds is read once per batch. A
// statement that went back to a round trip per session would make the
// count grow with the corpus, and fail here.
func TestImportRoundTripsDoNotGrowWithSessions(t *testing.T) {
	ctx := context.Background()
	trips := func(children int) int {
		dir := t.TempDir()
		log := usageLog(3)
		write := func(id string, parent *string, created int64) {
			if _, err := dshformat.WriteJSONL(ctx, dir, header(id, parent, created), log, dshformat.WriteOptions{Compression: dshformat.CompressionNone}); err != nil {
				t.Fatal(err)
			}
		}
		write("p", nil, 1_700_000_000_000)
		for i := range children {
			write(fmt.Sprintf("c-%04d", i), ptr("p"), 1_700_000_000_001+int64(i))
		}
		st := openT(t, pgtest.NewDatabase(t))
		var statements bytes.Buffer
		logged := debuglog.With(ctx, slog.New(slog.NewTextHandler(&statements, &slog.HandlerOptions{Level: slog.LevelDebug})))
		src, err := dshformat.OpenJSONL(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		defer src.Close()
		sum, err := transfer.Import(logged, st, src, transfer.ImportOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if sum.Imported != children+1 {
			t.Fatalf("imported %d sessions, want %d: %+v", sum.Imported, children+1, sum)
		}
		out := statements.String()
		// A query (an exec, a query row) and a pipeline are a round trip
		// each, a COPY two (its start, then its rows).
		n := strings.Count(out, "kind=query") + strings.Count(out, "kind=pipeline") + 2*strings.Count(out, "kind=copy")
		return n
	}
	small, large := trips(20), trips(400)
	// 380 more sessions, each of about ten statements, may cost a few
	// more pipelines (pipelineLimit statements each), not a round trip a
	// session.
	if extra := large - small; extra > 380*10/pipelineLimit+4 {
		t.Errorf("importing 401 sessions took %d round trips, 21 sessions %d: %d more for 380 sessions (run with --debug to see them)", large, small, extra)
	}
}
