package pgstore

import (
	"context"
	"net/url"
	"testing"

	"github.com/dsh-project/dsh/internal/pgtest"
	"github.com/dsh-project/dsh/internal/storetest"
)

// The children's (createdAt, id) order is the query's, not the plan's: with
// the planner kept off the sessions_by_parent index (whose key holds id, so
// that an index scan returns ties in id order even without the tie-break),
// ChildrenOf and ChildListing still give ties in id order.
func TestChildTieOrderOnEveryPlan(t *testing.T) {
	for name, settings := range map[string]map[string]string{
		"sequential scan": {"enable_indexscan": "off", "enable_indexonlyscan": "off", "enable_bitmapscan": "off"},
		"bitmap scan":     {"enable_indexscan": "off", "enable_indexonlyscan": "off", "enable_seqscan": "off"},
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			u, err := url.Parse(pgtest.NewDatabase(t))
			if err != nil {
				t.Fatal(err)
			}
			q := u.Query()
			for k, v := range settings {
				// Run-time parameters of the connection: every
				// statement of this store is planned under them.
				q.Set(k, v)
			}
			u.RawQuery = q.Encode()
			st, err := Open(ctx, u.String())
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			var plan string
			if err := st.pool.QueryRow(ctx, "SHOW enable_indexscan").Scan(&plan); err != nil || plan != "off" {
				t.Fatalf("enable_indexscan = %q, %v; the planner settings did not reach the connection", plan, err)
			}
			storetest.ChildTieOrder(ctx, t, st)
		})
	}
}
