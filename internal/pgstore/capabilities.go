package pgstore

import "github.com/dsh-project/dsh/internal/sqlstore"

// The store has every capability of backend.Capabilities a dsh store can
// have (sqlstore.Store lists them); storetest checks the list at run time.
var _ sqlstore.Store = (*Store)(nil)
