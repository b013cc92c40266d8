-- Leases: which live process is running a turn of a session right now.
--
-- DSH calls a session live when it is loaded in the current process; dsh
-- needs that across processes. A process that runs a turn of a session holds
-- its row here and renews it (heartbeat) while it works; an unexpired row
-- makes the session `running` in listings and refuses a second writer. A
-- holder that crashes stops renewing and its row simply expires; the next
-- acquirer takes it over. Rows are deleted on release, so the table holds
-- only running sessions and crashed holders' leftovers — a handful of rows,
-- which is why no index beyond the key is needed.
--
-- Times are epoch milliseconds from the holder's wall clock.
CREATE TABLE leases (
    session_id   TEXT PRIMARY KEY NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    -- holder is unique per holding process run; pid and host are for people
    -- (and diagnose) to find the process.
    holder       TEXT NOT NULL,
    pid          INTEGER NOT NULL,
    host         TEXT NOT NULL,
    acquired_at  INTEGER NOT NULL,
    heartbeat_at INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL,
    -- The holder's published live projection snapshot: the raw view of its
    -- `subagent` unit (`null` or an identity object) and the last seq it
    -- covers. NULL = nothing published yet. Listing reads a running child
    -- from these columns alone, never from the log.
    subagent     TEXT,
    as_of_seq    INTEGER,
    -- Set when the holder's projection unit failed; the row is then listed
    -- as `corrupt`.
    unit_failure TEXT,
    CHECK (expires_at >= heartbeat_at),
    CHECK ((subagent IS NULL) = (as_of_seq IS NULL))
) STRICT;
