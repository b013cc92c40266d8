package session

import "encoding/json"

// Fork builds an ordinary fork of a parent with the given header and
// stored events (storage-formats §1.6): the seed is the parent's prefix up to
// its last turn/end, then a session/end-seed; seedLength is the number of
// copied events. The child is in the parent's format: a later format's
// child is seeded (isSeeded) and its marker is the tagged one
// (data.inherited true) whose seq is the cut; format 0 writes it untagged.
func Fork(parent Header, events []Event, id string, nowMillis int64) (Header, []Event) {
	prefix := ForkPrefix(events)
	seedLength := int64(len(prefix))
	version, marker := int64(FormatVersion), json.RawMessage(`{}`)
	if IsLaterFormat(parent.Version) {
		version, marker = parent.Version, json.RawMessage(`{"inherited":true}`)
	}
	child := Header{
		Version:       version,
		ID:            id,
		CreatedAt:     nowMillis,
		Cwd:           parent.Cwd,
		ParentSession: &parent.ID,
		SeedLength:    &seedLength,
		AgentPreset:   parent.AgentPreset,
	}
	// DSH appends the end-seed marker unless the seed already ends with
	// one; a fork prefix ends with a turn/end (or is empty), so here the
	// marker is always added.
	seed := make([]Event, len(prefix), len(prefix)+1)
	copy(seed, prefix)
	seed = append(seed, Event{
		Type: TypeEndSeed,
		Seq:  seedLength,
		Time: nowMillis,
		Data: marker,
	})
	return child, seed
}
