package sqlstore

import "github.com/dsh-project/dsh/internal/backend"

// Core implements the backend methods whose SQL and choreography the two
// stores share. A store embeds it, bound to the store (or the view) it
// serves, so its methods are the store's.
type Core struct {
	db DB
	d  *Dialect
}

// NewCore binds the shared methods to db, which speaks d.
func NewCore(db DB, d *Dialect) Core { return Core{db: db, d: d} }

// Store is every capability of backend.Capabilities a dsh store has (all
// but those only a foreign corpus may have): what each store built on Core
// asserts at compile time, one list for both. storetest checks the same
// list at run time.
type Store interface {
	backend.Backend
	backend.SubtreeReader
	backend.ChildListingReader
	backend.SubtreeListingReader
	backend.ColdChildListingReader
	backend.ColdBatchReader
	backend.VerifiedBatchReader
	backend.BatchAuditor
	backend.ColdVerdictReader
	backend.RegistryFoldRecorder
	backend.Unverifier
	backend.ChangeNotifier
	backend.UsageReader
	backend.SearchReader
	backend.ResolvedRowReader
	backend.ResolvedRowWriter
	backend.HeaderBatchReader
	backend.CatalogViewReader
	backend.CatalogViewWriter
}
