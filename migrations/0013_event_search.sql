-- Full-text search of message text (dsh search; the rule is docs/search.md's
-- and package search's Text): event_text_of computes an event's searched
-- text, event_search maps each searched event to a stable row id (an
-- INTEGER PRIMARY KEY, which VACUUM keeps) and event_search_fts is the FTS5
-- index over the text, contentless: the text is read back from events when
-- a hit is shown, so the index does not hold the text twice.
--
-- Triggers on events keep it exact on every write by any writer — dsh's
-- appends, imports and repairs, and any other program — and the back-fill
-- at the end indexes a store written before this migration.
--
-- The text of an event of type user/message, assistant/message or
-- tool/result: its message is data (user/message) or the last member
-- "message" of data (an object); the text is the string "text" of each
-- object of the message's last member "content" (an array) whose "type" is
-- "text", and of each such object in the "content" array of a block whose
-- "type" is "tool-result", joined by a newline in order. "Last" is
-- JSON.parse's rule for duplicate keys (json_each in text order, the
-- highest id).

CREATE TABLE event_search (
    id         INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL,
    seq        INTEGER NOT NULL,
    UNIQUE (session_id, seq)
) STRICT;

-- unicode61 remove_diacritics 2: words are runs of letters, digits and
-- private-use characters, folded in case and Latin diacritics.
CREATE VIRTUAL TABLE event_search_fts USING fts5(
    text, content = '', contentless_delete = 1,
    tokenize = 'unicode61 remove_diacritics 2');

-- An event's message content (the array, NULL when there is none).
CREATE VIEW event_content_of AS
SELECT e.session_id AS session_id, e.seq AS seq,
       (SELECT CASE WHEN x.type = 'array' THEN x.value END
          FROM json_each(CASE
                   WHEN NOT json_valid(e.data) OR json_type(e.data) <> 'object' THEN NULL
                   WHEN e.type = 'user/message' THEN e.data
                   ELSE (SELECT CASE WHEN m.type = 'object' THEN m.value END FROM json_each(e.data) AS m
                          WHERE m.key = 'message' ORDER BY m.id DESC LIMIT 1)
               END) AS x
         WHERE x.key = 'content' ORDER BY x.id DESC LIMIT 1) AS content
  FROM events AS e
 WHERE e.type IN ('user/message', 'assistant/message', 'tool/result');

CREATE VIEW event_text_of AS
SELECT c.session_id AS session_id, c.seq AS seq,
       coalesce((
           SELECT group_concat(p.t, char(10)) FROM (
               SELECT b.id AS o1, 0 AS o2,
                      (SELECT CASE WHEN x.type = 'text' THEN x.value END FROM json_each(b.value) AS x
                        WHERE x.key = 'text' ORDER BY x.id DESC LIMIT 1) AS t
                 FROM json_each(c.content) AS b
                WHERE b.type = 'object'
                  AND (SELECT CASE WHEN x.type = 'text' THEN x.value END FROM json_each(b.value) AS x
                        WHERE x.key = 'type' ORDER BY x.id DESC LIMIT 1) = 'text'
               UNION ALL
               SELECT b.id, i.id,
                      (SELECT CASE WHEN x.type = 'text' THEN x.value END FROM json_each(i.value) AS x
                        WHERE x.key = 'text' ORDER BY x.id DESC LIMIT 1)
                 FROM json_each(c.content) AS b,
                      json_each((SELECT CASE WHEN x.type = 'array' THEN x.value END FROM json_each(b.value) AS x
                                  WHERE x.key = 'content' ORDER BY x.id DESC LIMIT 1)) AS i
                WHERE b.type = 'object'
                  AND (SELECT CASE WHEN x.type = 'text' THEN x.value END FROM json_each(b.value) AS x
                        WHERE x.key = 'type' ORDER BY x.id DESC LIMIT 1) = 'tool-result'
                  AND i.type = 'object'
                  AND (SELECT CASE WHEN x.type = 'text' THEN x.value END FROM json_each(i.value) AS x
                        WHERE x.key = 'type' ORDER BY x.id DESC LIMIT 1) = 'text'
                ORDER BY 1, 2
           ) AS p), '') AS text
  FROM event_content_of AS c;

CREATE TRIGGER events_search_insert AFTER INSERT ON events
WHEN NEW.type IN ('user/message', 'assistant/message', 'tool/result')
BEGIN
    INSERT INTO event_search (session_id, seq) VALUES (NEW.session_id, NEW.seq);
    INSERT INTO event_search_fts (rowid, text)
    SELECT last_insert_rowid(), text FROM event_text_of WHERE session_id = NEW.session_id AND seq = NEW.seq;
END;

CREATE TRIGGER events_search_delete AFTER DELETE ON events
WHEN OLD.type IN ('user/message', 'assistant/message', 'tool/result')
BEGIN
    DELETE FROM event_search_fts WHERE rowid = (SELECT id FROM event_search WHERE session_id = OLD.session_id AND seq = OLD.seq);
    DELETE FROM event_search WHERE session_id = OLD.session_id AND seq = OLD.seq;
END;

-- dsh never updates an event; another writer's update is a delete and an
-- insert to the index.
CREATE TRIGGER events_search_update AFTER UPDATE ON events
BEGIN
    DELETE FROM event_search_fts WHERE rowid = (SELECT id FROM event_search WHERE session_id = OLD.session_id AND seq = OLD.seq);
    DELETE FROM event_search WHERE session_id = OLD.session_id AND seq = OLD.seq;
    INSERT INTO event_search (session_id, seq)
    SELECT NEW.session_id, NEW.seq WHERE NEW.type IN ('user/message', 'assistant/message', 'tool/result');
    INSERT INTO event_search_fts (rowid, text)
    SELECT s.id, t.text FROM event_search AS s
      JOIN event_text_of AS t ON t.session_id = s.session_id AND t.seq = s.seq
     WHERE s.session_id = NEW.session_id AND s.seq = NEW.seq;
END;

-- The back-fill: the searched events of the sessions already stored, a chunk
-- of sessions at a time (dsh reports the progress).
-- dsh:backfill per chunk of sessions (ids in dsh_backfill_ids)
INSERT INTO event_search (session_id, seq)
SELECT session_id, seq FROM events
 WHERE type IN ('user/message', 'assistant/message', 'tool/result')
   AND session_id IN (SELECT id FROM dsh_backfill_ids)
 ORDER BY session_id, seq;

INSERT INTO event_search_fts (rowid, text)
SELECT s.id, t.text FROM event_search AS s
  JOIN event_text_of AS t ON t.session_id = s.session_id AND t.seq = s.seq
 WHERE s.session_id IN (SELECT id FROM dsh_backfill_ids);
