package sqlstore

// Core implements the backend methods whose SQL and choreography the two
// stores share. A store embeds it, bound to the store (or the view) it
// serves, so its methods are the store's.
type Core struct {
	db DB
	d  *Dialect
}

// NewCore binds the shared methods to db, which speaks d.
func NewCore(db DB, d *Dialect) Core { return Core{db: db, d: d} }
