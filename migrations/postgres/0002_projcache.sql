-- dsh's own projection checkpoint cache (package internal/projcache), the
-- table projection_checkpoints. Not DSH's session_projcache.json file, which
-- dsh only reads (dshformat.ReadCache) and never stores here.
-- Projection checkpoint cache, as ../0002_projcache.sql: one record per
-- session, replaced whole on every write, served only while its witness
-- columns equal the session's header and each unit row's `ver` equals the
-- unit's registered state version. No foreign key to sessions: a record that
-- outlives its session is harmless and `dsh cache rebuild` removes it.
CREATE TABLE projection_checkpoints (
    session_id       text COLLATE "C" PRIMARY KEY,
    -- lifecycle witness: the header the rows were folded from
    version          bigint NOT NULL,
    created_at       bigint NOT NULL,
    cwd              text,
    parent_session   text COLLATE "C",
    is_seeded        boolean NOT NULL CHECK (is_seeded = (seed_length IS NOT NULL)),
    seed_length      bigint,
    origin           text,
    delegation_depth bigint,
    agent_preset     text,
    -- watermark: the last durable event seq the rows cover (-1 = none)
    as_of_seq        bigint NOT NULL,
    -- JSON {"<unit key>":{"ver":<int>,"seq":<int>,"val":<state>},…}, kept
    -- as text: the reader's fast path depends on the bytes dsh wrote.
    rows             text NOT NULL,
    written_at       bigint NOT NULL -- epoch ms
);
