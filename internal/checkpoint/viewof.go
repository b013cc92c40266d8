package checkpoint

import "encoding/json"

// ViewOf reads one unit's view out of a stored record's rows text (whose
// witness the caller has already matched): the view of key's row when that
// row is at the registered state version and renders, nil otherwise. A
// record that does not decode is an error, a Poisoned record to Lookup. It is Lookup's judgement without the maps Lookup builds, for a
// listing that reads one unit of thousands of records; a record in the form
// encodeRows writes for a single unit is read without a general decode.
func (r *Registry) ViewOf(text []byte, key string) (v json.RawMessage, err error) {
	units := r.list()
	if rowKey, row, ok := canonicalRow(text); ok && len(units) == 1 {
		u := units[0]
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
