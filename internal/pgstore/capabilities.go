package pgstore

import "github.com/dsh-project/dsh/internal/backend"

// The store has every capability of backend.Capabilities a dsh store can
// have; storetest checks the list at run time.
var _ interface {
	backend.Backend
	backend.SubtreeReader
	backend.ChildListingReader
	backend.ColdChildListingReader
	backend.SubtreeListingReader
	backend.VerifiedBatchReader
	backend.ColdBatchReader
	backend.BatchAuditor
	backend.ColdVerdictReader
	backend.RegistryFoldRecorder
	backend.Unverifier
	backend.ChangeNotifier
} = (*Store)(nil)
