// Package sqlstore is what dsh's two SQL stores (sqlitepersist, pgstore)
// share beyond the dialect-free log rules of storedlog: the --debug
// statement log, and the read–judge–repair–record choreography of the
// backend methods, written once against Tx, the few operations each
// store's dialect and driver provide. A store package keeps what is
// genuinely its own: opening and migrating its database, its driver's
// transactions and errors, and the statements whose SQL differs (row
// locking, COPY, batch inserts, its type conversions).
package sqlstore
