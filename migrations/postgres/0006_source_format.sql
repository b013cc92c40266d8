-- PostgreSQL twin of ../0006_source_format.sql: the foreign format a
-- session was imported from (jsonl-vN, jsonl-vN-zstd, dsh-sqlite-17), NULL
-- for sessions dsh created. Not part of the header or its witness.
ALTER TABLE sessions ADD COLUMN source_format TEXT;
