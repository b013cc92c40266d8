-- Which events of an imported log the source's reader read from text
-- holding bytes that are not UTF-8 (a JSONL line, a schema-17 TEXT column),
-- each ill-formed sequence replaced with U+FFFD as DSH's lenient decoding
-- does: the first such event's seq and how many events there are (every
-- event a packed row expands to counts). NULL when none, or for a session
-- dsh created. Written by the import that stores or appends the log, in its
-- transaction, from the source's read (so a later import that writes the
-- log from a clean source clears it); diagnose reports it as
-- EVENT_TEXT_REPLACED, as diagnose --source does in place. Not part of the
-- header: no trigger watches these columns.
ALTER TABLE sessions ADD COLUMN text_replaced_first_seq INTEGER CHECK (text_replaced_first_seq >= 0);
ALTER TABLE sessions ADD COLUMN text_replaced_events INTEGER CHECK (text_replaced_events > 0);
