-- Leases, as ../0003_leases.sql: which live process is running a turn of a
-- session right now. A holder renews its row while it works; an unexpired
-- row makes the session `running` and refuses a second writer; a crashed
-- holder's row expires and the next acquirer takes it over. Rows are deleted
-- on release.
--
-- Times are epoch milliseconds of the database server's clock: on
-- PostgreSQL the holders are on different machines, so no client clock is
-- ever compared with another's.
CREATE TABLE leases (
    session_id   text COLLATE "C" PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
    -- holder is unique per holding process run; pid and host are for people
    -- (and diagnose) to find the process.
    holder       text NOT NULL,
    pid          bigint NOT NULL,
    host         text NOT NULL,
    acquired_at  bigint NOT NULL,
    heartbeat_at bigint NOT NULL,
    expires_at   bigint NOT NULL,
    -- The holder's published live projection snapshot: the raw view of its
    -- `subagent` unit and the last seq it covers; NULL = nothing published.
    subagent     text,
    as_of_seq    bigint,
    -- Set when the holder's projection unit failed; listed as `corrupt`.
    unit_failure text,
    CHECK (expires_at >= heartbeat_at),
    CHECK ((subagent IS NULL) = (as_of_seq IS NULL))
);
