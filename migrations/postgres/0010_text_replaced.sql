-- PostgreSQL twin of ../0010_text_replaced.sql: the first seq and the
-- number of an imported log's events the source's reader read from text
-- that is not UTF-8 (replaced with U+FFFD); NULL when none. Not part of the
-- header: no trigger watches these columns.
ALTER TABLE sessions ADD COLUMN text_replaced_first_seq bigint CHECK (text_replaced_first_seq >= 0);
ALTER TABLE sessions ADD COLUMN text_replaced_events bigint CHECK (text_replaced_events > 0);
