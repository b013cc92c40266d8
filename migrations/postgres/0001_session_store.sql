-- dsh's session store on PostgreSQL: the same logical schema as
-- ../0001_session_store.sql (one row per session header, the append-only
-- event log, torn tails kept byte-for-byte), in PostgreSQL's native types.
--
-- NULL always means "absent" for the optional header fields and envelope keys:
-- DSH distinguishes an absent seedLength (unseeded) from 0 (seeded, empty
-- prefix) and an absent sourceEventSeqs from [].
--
-- Every identifier column sorts with COLLATE "C" (byte order), as SQLite's
-- BINARY collation does, so enumeration order does not depend on the
-- server's locale. JSON is kept as text, never jsonb: event data must read
-- back byte for byte, and jsonb would reorder keys and reformat numbers.

CREATE TABLE sessions (
    id               text COLLATE "C" PRIMARY KEY,
    version          bigint NOT NULL,
    created_at       bigint NOT NULL,
    cwd              text,
    parent_session   text COLLATE "C",
    seed_length      bigint,
    origin           text,
    delegation_depth bigint,
    agent_preset     text,
    -- Bookkeeping maintained by dsh's own write paths, as in SQLite:
    -- next_seq and validator_state are trusted only while verified; the
    -- triggers below clear verified whenever the log is changed by anything
    -- else.
    next_seq         bigint NOT NULL DEFAULT 0,
    verified         boolean NOT NULL DEFAULT false,
    validator_state  bytea,
    revision         bigint NOT NULL DEFAULT 0,
    -- Insertion order, which SQLite keeps in its rowid: sessions are listed
    -- (and exported) in the order they were stored.
    inserted         bigint GENERATED ALWAYS AS IDENTITY UNIQUE
);

-- One parent's children in (createdAt, id) order without visiting the
-- table: the header columns ride along in the index.
CREATE INDEX sessions_by_parent
    ON sessions (parent_session, created_at, id)
    INCLUDE (version, cwd, seed_length, origin, delegation_depth, agent_preset)
    WHERE parent_session IS NOT NULL;

-- "Does this session have a subagent child?" as a single index probe.
CREATE INDEX sessions_subagent_children
    ON sessions (parent_session)
    WHERE origin = 'subagent';

CREATE TABLE events (
    session_id        text COLLATE "C" NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq               bigint NOT NULL,
    type              text NOT NULL,
    time              bigint NOT NULL,
    -- Raw JSON text of the event's data, exactly as received; NULL only for
    -- an imported event that had no data key.
    data              text,
    -- JSON array of integers; NULL = key absent, '[]' = present and empty.
    source_event_seqs text,
    -- Raw JSON of surfaceOp ('"append"' or a replace object); NULL = absent.
    surface_op        text,
    ignorable         boolean NOT NULL DEFAULT false,
    -- JSON array of envelope key names DSH does not define, kept so that an
    -- imported event DSH would reject is still rejected when read back.
    unknown_keys      text,
    PRIMARY KEY (session_id, seq)
);

-- Descriptor events are what listing folds; this keeps reading them an index
-- range over the few matching rows instead of a pass over the whole log.
CREATE INDEX events_descriptors
    ON events (session_id, seq)
    WHERE type = 'subagent/descriptor';

CREATE TABLE torn_tails (
    session_id text COLLATE "C" PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
    from_seq   bigint NOT NULL,
    reason     text NOT NULL,
    raw        bytea NOT NULL
);

-- Any change to a log that does not come from dsh's write paths makes the
-- stored validation state untrustworthy. dsh's own writes clear the flag the
-- same way and set it again, with fresh state, before they commit.
--
-- The event triggers are statement-level with transition tables, so a bulk
-- insert (COPY included) clears each touched session's flag once instead
-- of once per row.
CREATE FUNCTION dsh_unverify_new_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE sessions SET verified = false
     WHERE verified AND id IN (SELECT session_id FROM new_rows);
    RETURN NULL;
END $$;

CREATE FUNCTION dsh_unverify_old_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE sessions SET verified = false
     WHERE verified AND id IN (SELECT session_id FROM old_rows);
    RETURN NULL;
END $$;

CREATE FUNCTION dsh_unverify_changed_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE sessions SET verified = false
     WHERE verified AND (id IN (SELECT session_id FROM old_rows)
                         OR id IN (SELECT session_id FROM new_rows));
    RETURN NULL;
END $$;

CREATE TRIGGER events_insert_unverifies AFTER INSERT ON events
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION dsh_unverify_new_rows();

CREATE TRIGGER events_update_unverifies AFTER UPDATE ON events
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION dsh_unverify_changed_rows();

CREATE TRIGGER events_delete_unverifies AFTER DELETE ON events
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION dsh_unverify_old_rows();

CREATE TRIGGER torn_tails_insert_unverifies AFTER INSERT ON torn_tails
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION dsh_unverify_new_rows();

-- A header is validated together with its log, so changing it also voids
-- the verification (dsh never updates header columns); and dsh always moves
-- verified from false to true when it rewrites the bookkeeping, so an update
-- that changes next_seq or validator_state while verified stays true came
-- from elsewhere. Both are decided on the row before it is written.
CREATE FUNCTION dsh_unverify_session() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.verified := false;
    RETURN NEW;
END $$;

CREATE TRIGGER sessions_header_update_unverifies
    BEFORE UPDATE OF version, id, created_at, cwd, parent_session, seed_length, origin,
                     delegation_depth, agent_preset ON sessions
    FOR EACH ROW EXECUTE FUNCTION dsh_unverify_session();

CREATE TRIGGER sessions_bookkeeping_unverifies
    BEFORE UPDATE OF next_seq, validator_state ON sessions
    FOR EACH ROW WHEN (OLD.verified AND NEW.verified)
    EXECUTE FUNCTION dsh_unverify_session();
