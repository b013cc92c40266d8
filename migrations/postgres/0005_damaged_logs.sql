-- PostgreSQL twin of ../0005_damaged_logs.sql: logs imported with damage
-- inside their committed region. The events table holds the valid prefix
-- (seqs below from_seq); this row keeps everything from the damage on exactly
-- as found, so the session stays listed, diagnosed and exportable.
CREATE TABLE damaged_logs (
    session_id text COLLATE "C" PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
    from_seq   bigint NOT NULL,
    reason     text NOT NULL,
    encoding   text NOT NULL CHECK (encoding IN ('jsonl-text', 'jsonl-zstd', 'dsh-sqlite-rows')),
    raw        bytea NOT NULL
);

CREATE TRIGGER damaged_logs_insert_unverifies AFTER INSERT ON damaged_logs
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION dsh_unverify_new_rows();
