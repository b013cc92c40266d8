-- dsh's session store: one row per session header, the append-only event log,
-- and torn tails kept byte-for-byte when a foreign corpus is imported.
--
-- NULL always means "absent" for the optional header fields and envelope keys:
-- DSH distinguishes an absent seedLength (unseeded) from 0 (seeded, empty
-- prefix) and an absent sourceEventSeqs from [].

CREATE TABLE sessions (
    id               TEXT PRIMARY KEY,
    version          INTEGER NOT NULL,
    created_at       INTEGER NOT NULL,
    cwd              TEXT,
    parent_session   TEXT,
    seed_length      INTEGER,
    origin           TEXT,
    delegation_depth INTEGER,
    agent_preset     TEXT,
    -- Bookkeeping maintained by dsh's own write paths (CreateSession, Append,
    -- Load, ImportSession). next_seq and validator_state are trusted only
    -- while verified = 1; the triggers below clear verified whenever the log
    -- is changed by anything else.
    next_seq         INTEGER NOT NULL DEFAULT 0,
    verified         INTEGER NOT NULL DEFAULT 0 CHECK (verified IN (0, 1)),
    validator_state  BLOB,
    revision         INTEGER NOT NULL DEFAULT 0
) STRICT;

-- One parent's children in (createdAt, id) order without touching other
-- sessions. The header columns are included so the lookup never leaves the
-- index (its cost does not depend on how large the rest of the table is).
CREATE INDEX sessions_by_parent
    ON sessions (parent_session, created_at, id, version, cwd, seed_length,
                 origin, delegation_depth, agent_preset)
    WHERE parent_session IS NOT NULL;

-- "Does this session have a subagent child?" as a single index probe.
CREATE INDEX sessions_subagent_children
    ON sessions (parent_session)
    WHERE origin = 'subagent';

CREATE TABLE events (
    session_id        TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq               INTEGER NOT NULL,
    type              TEXT NOT NULL,
    time              INTEGER NOT NULL,
    -- Raw JSON text of the event's data, exactly as received; NULL only for
    -- an imported event that had no data key.
    data              TEXT,
    -- JSON array of integers; NULL = key absent, '[]' = present and empty.
    source_event_seqs TEXT,
    -- Raw JSON of surfaceOp ('"append"' or a replace object); NULL = absent.
    surface_op        TEXT,
    ignorable         INTEGER NOT NULL DEFAULT 0 CHECK (ignorable IN (0, 1)),
    -- JSON array of envelope key names DSH does not define, kept so that an
    -- imported event DSH would reject is still rejected when read back.
    unknown_keys      TEXT,
    PRIMARY KEY (session_id, seq)
) STRICT;

-- Descriptor events are what listing folds; this keeps reading them an index
-- range over the few matching rows instead of a pass over the whole log.
CREATE INDEX events_descriptors
    ON events (session_id, seq)
    WHERE type = 'subagent/descriptor';

CREATE TABLE torn_tails (
    session_id TEXT PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
    from_seq   INTEGER NOT NULL,
    reason     TEXT NOT NULL,
    raw        BLOB NOT NULL
) STRICT;

-- Any change to a log that does not come from dsh's write paths makes the
-- stored validation state untrustworthy. dsh's own writes clear the flag the
-- same way and set it again, with fresh state, before they commit.
CREATE TRIGGER events_insert_unverifies AFTER INSERT ON events
BEGIN
    UPDATE sessions SET verified = 0 WHERE id = NEW.session_id AND verified <> 0;
END;

CREATE TRIGGER events_update_unverifies AFTER UPDATE ON events
BEGIN
    UPDATE sessions SET verified = 0
     WHERE id IN (OLD.session_id, NEW.session_id) AND verified <> 0;
END;

CREATE TRIGGER events_delete_unverifies AFTER DELETE ON events
BEGIN
    UPDATE sessions SET verified = 0 WHERE id = OLD.session_id AND verified <> 0;
END;

CREATE TRIGGER torn_tails_insert_unverifies AFTER INSERT ON torn_tails
BEGIN
    UPDATE sessions SET verified = 0 WHERE id = NEW.session_id AND verified <> 0;
END;

-- A header is validated together with its log, so changing it also voids
-- the verification. dsh never updates header columns.
CREATE TRIGGER sessions_header_update_unverifies
AFTER UPDATE OF version, id, created_at, cwd, parent_session, seed_length, origin,
                delegation_depth, agent_preset ON sessions
BEGIN
    UPDATE sessions SET verified = 0 WHERE id = NEW.id AND verified <> 0;
END;

-- dsh always moves verified from 0 to 1 when it rewrites the bookkeeping, so
-- an update that changes it while verified stays 1 came from elsewhere.
CREATE TRIGGER sessions_bookkeeping_unverifies
AFTER UPDATE OF next_seq, validator_state ON sessions
WHEN OLD.verified = 1 AND NEW.verified = 1
BEGIN
    UPDATE sessions SET verified = 0 WHERE id = NEW.id;
END;
