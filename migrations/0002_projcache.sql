-- dsh's own projection checkpoint cache (package internal/projcache), the
-- table projection_checkpoints. Not DSH's session_projcache.json file, which
-- dsh only reads (dshformat.ReadCache) and never stores here.
-- Projection checkpoint cache: one record per session, replaced whole on
-- every write. A record is derived data: it is served only while its witness
-- columns equal the session's header (same lifecycle), and each unit row in
-- `rows` only while its `ver` equals the unit's registered state version.
-- No foreign key to the sessions table: a record that outlives its session
-- is harmless (its witness no longer matches anything) and `dsh cache
-- rebuild` removes it.
CREATE TABLE projection_checkpoints (
    session_id       TEXT    PRIMARY KEY NOT NULL,
    -- lifecycle witness: the header the rows were folded from
    version          INTEGER NOT NULL,
    created_at       INTEGER NOT NULL,
    cwd              TEXT,
    parent_session   TEXT,
    is_seeded        INTEGER NOT NULL CHECK (is_seeded = (seed_length IS NOT NULL)),
    seed_length      INTEGER,
    origin           TEXT,
    delegation_depth INTEGER,
    agent_preset     TEXT,
    -- watermark: the last durable event seq the rows cover (-1 = none)
    as_of_seq        INTEGER NOT NULL,
    -- JSON {"<unit key>":{"ver":<int>,"seq":<int>,"val":<state>},…}
    rows             TEXT    NOT NULL,
    written_at       INTEGER NOT NULL -- epoch ms
) STRICT;
