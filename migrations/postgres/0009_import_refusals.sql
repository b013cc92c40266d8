-- PostgreSQL twin of ../0009_import_refusals.sql: the sessions an import
-- found but could not store (location, the id read or '', the diagnose code
-- the refusal gives, the seq for LOG_UNREADABLE, the reason), and whether
-- the header is kept in sessions as a listed header-only session every read
-- of which fails with the refusal.
CREATE TABLE import_refusals (
    location   text NOT NULL,
    session_id text COLLATE "C" NOT NULL,
    code       text NOT NULL CHECK (code IN ('HEADER_UNREADABLE', 'UNSUPPORTED_FORMAT', 'LOG_UNREADABLE')),
    seq        bigint,
    reason     text NOT NULL,
    listed     boolean NOT NULL DEFAULT false,
    PRIMARY KEY (location, session_id)
);

CREATE INDEX import_refusals_by_session ON import_refusals (session_id);
