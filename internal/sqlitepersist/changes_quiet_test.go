package sqlitepersist

import (
	"context"
	"testing"
	"time"

	"github.com/dsh-project/dsh/internal/storetest"
)

// The change signal calls once per change it sees: after a commit has
// woken the watcher, nothing more comes until the next commit.
func TestWatchChangesQuietBetweenCommits(t *testing.T) {
	ctx := context.Background()
	s, _ := openStore(t)
	w := storetest.Watch(ctx, t, s)
	// Several polls of the signal with nothing written.
	quiet := 5 * changePollInterval
	w.Next("the watch in place", 10*time.Second)
	w.Quiet("once in place", quiet)
	for _, id := range []string{"a", "b"} {
		if err := s.CreateSession(ctx, rootHeader(id), nil); err != nil {
			t.Fatal(err)
		}
		w.Next("session "+id+" created", 10*time.Second)
		w.Quiet("after session "+id, quiet)
	}
	w.Stop(10 * time.Second)
}
