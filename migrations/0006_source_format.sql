-- Which foreign format a session was imported from, so that export can
-- write it back in that format and `session show` can say where it came
-- from: jsonl-vN (DSH session format N, plain JSONL), jsonl-vN-zstd (the
-- same, zstd-framed) or dsh-sqlite-17 (DSH's schema-17 store). NULL for a
-- session dsh created itself, or imported before this column existed.
-- Not part of the header: it never takes part in the lifecycle witness,
-- and changing it does not void a log's verification.
ALTER TABLE sessions ADD COLUMN source_format TEXT;
