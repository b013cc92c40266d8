// Package subagent is dsh's subagent service: what DSH's runtime does with
// subagent children, offline and over any corpus.
//
//   - Listing (Lister, NewStoreLister, NewCorpusLister): the catalog rows of
//     one parent's children or descendants, resolved with DSH's three-rung
//     ladder — a live holder's snapshot, a checkpoint record, a cold read
//     of the log — and mapped to DSH's four row states.
//   - Running (Runtime: Start, Resume): creating a child with its
//     descriptor, taking its lease, running a turn through a provider and
//     appending DSH's event layout, checkpointing as it goes.
//   - Descriptors: parsing and writing subagent/descriptor events, and the
//     `subagent` projection unit that folds a child's identity.
//
// It reads and writes only through the narrow backend interfaces it names
// (ListingReader, ListingStore, RuntimeStore, CheckpointStore), so the same
// code serves dsh's SQLite store, a PostgreSQL catalog and, for listing, a
// foreign DSH corpus read in place (dshformat.Corpus).
package subagent
