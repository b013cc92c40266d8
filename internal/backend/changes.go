package backend

import "context"

// ChangeNotifier is a store's change signal, for watchers (dsh list --watch, dsh serve).
//
// Not every change to what a listing shows is a write: a running child
// becomes inactive when its lease expires, and nothing is written then. A
// watcher must also re-read when the earliest unexpired lease it saw
// (LeaseReader.Leases, judged by LeaseReader.Now) expires.
type ChangeNotifier interface {
	// WatchChanges blocks until ctx ends, calling notify after the store has seen one or
	// more committed writes, by any process, since WatchChanges began or since the previous
	// call. Calls are coalesced (one may stand for many commits) and never concurrent. It
	// holds one connection of its own for the whole watch. It returns ctx.Err() when ctx
	// ends, or an error when the signal is lost.
	//
	// The first call comes as soon as the watch is in place, whether or
	// not anything was written: a caller that reads on every call then
	// misses no commit between its first read and the start of the watch.
	// The watch writes nothing, and works on a store opened read-only.
	WatchChanges(ctx context.Context, notify func()) error
}
