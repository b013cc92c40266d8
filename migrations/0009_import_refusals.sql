-- Sessions an import found in its source but could not store: a header that
-- cannot be read or is refused (a later format version, a BOM, an empty id),
-- an id found in several files, text no store can keep (a NUL). Kept so that
-- diagnose and list of the database say what they say of the source in
-- place, instead of the refusal living only in import's output.
--
-- location: the file or database the session was found in, as import named
-- it. session_id: the id read from it, '' when none could be read or kept.
-- code: the diagnose finding the refusal gives, as diagnose --source gives
-- it for the same damage (HEADER_UNREADABLE: no listing shows the session;
-- UNSUPPORTED_FORMAT or LOG_UNREADABLE at seq: its log cannot be read).
-- listed: the header was read and the store keeps it in sessions as a
-- header-only session every read of which fails with this refusal, so that
-- a listing shows the unavailable row DSH shows for it (and its children
-- sit under it). A later import that stores the id, or reads a session from
-- the same file, deletes the record and such a header with it.
CREATE TABLE import_refusals (
    location   TEXT NOT NULL,
    session_id TEXT NOT NULL,
    code       TEXT NOT NULL CHECK (code IN ('HEADER_UNREADABLE', 'UNSUPPORTED_FORMAT', 'LOG_UNREADABLE')),
    seq        INTEGER,
    reason     TEXT NOT NULL,
    listed     INTEGER NOT NULL DEFAULT 0 CHECK (listed IN (0, 1)),
    PRIMARY KEY (location, session_id)
) STRICT;

CREATE INDEX import_refusals_by_session ON import_refusals (session_id);
