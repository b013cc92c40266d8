package projcache

import "encoding/json"

// ViewOf reads one unit's view out of a stored record's rows text (whose
// witness the caller has already matched): the view of key's row when that
// row is at the registered state version and renders, nil otherwise. A
// record that does not decode is an error, a Poisoned record to Lookup. It is Lookup's judgement without the maps Lookup builds, for a
// listing that reads one unit of thousands of records; a record in the form
// encodeRows writes for a single unit is read without a general decode.
func (r *Registry) ViewOf(text []byte, key string) (v json.RawMessage, err error) {
	if u, rowKey, row, ok := r.soleRow(text); ok {
		if string(rowKey) != key || u.Key() != key || row.Ver != u.StateVersion() {
			return nil, nil
		}
		v, err = view(u, row.Val)
		if err != nil {
			return nil, nil
		}
		return v, nil
	}
	cp, err := decodeRows(text)
	if err != nil {
		return nil, err
	}
	values, _ := r.ViewCheckpoint(cp)
	return values[key], nil
}

// SoleRowState is ViewOf's input for the record form dsh writes: when the
// registry has one unit, keyed key, and text is in encodeRows's canonical
// one-unit form with key's row at that unit's state version, it returns the
// unit and the row's state, which ViewOf renders with that unit's View. ok
// is false for anything else (ViewOf then judges the record). A caller that
// knows the unit can read its view from the state without rendering it.
func (r *Registry) SoleRowState(text []byte, key string) (u Unit, state json.RawMessage, ok bool) {
	u, rowKey, row, ok := r.soleRow(text)
	if !ok || string(rowKey) != key || u.Key() != key || row.Ver != u.StateVersion() {
		return nil, nil, false
	}
	return u, row.Val, true
}

// soleRow parses a canonical one-unit record of a one-unit registry
// without copying the registry's unit list.
func (r *Registry) soleRow(text []byte) (u Unit, key []byte, row Row, ok bool) {
	r.mu.RLock()
	if len(r.units) == 1 {
		u = r.units[0]
	}
	r.mu.RUnlock()
	if u == nil {
		return nil, nil, Row{}, false
	}
	key, row, ok = canonicalRow(text)
	return u, key, row, ok
}
