-- Logs imported with damage inside their committed region: stored data DSH's
-- inspect refuses (an unparsable line or row, a seq gap, a damaged zstd frame)
-- before a later turn/end. The events table holds the valid prefix, seqs below
-- from_seq; this row keeps everything from the damage on exactly as found, so
-- the session stays in the store — listed as DSH lists it (unavailable),
-- reported by diagnose and written back by export — instead of being dropped.
CREATE TABLE damaged_logs (
    session_id TEXT PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
    from_seq   INTEGER NOT NULL,
    -- why the log cannot be read, as the source's reader said it
    reason     TEXT NOT NULL,
    -- how raw holds the data: 'jsonl-text' (JSONL text from the damaged line
    -- on), 'jsonl-zstd' (a zstd session file's frames after its header frame)
    -- or 'dsh-sqlite-rows' (DSH schema-17 rows, one JSON object per line)
    encoding   TEXT NOT NULL CHECK (encoding IN ('jsonl-text', 'jsonl-zstd', 'dsh-sqlite-rows')),
    raw        BLOB NOT NULL
) STRICT;

CREATE TRIGGER damaged_logs_insert_unverifies AFTER INSERT ON damaged_logs
BEGIN
    UPDATE sessions SET verified = 0 WHERE id = NEW.session_id AND verified <> 0;
END;
