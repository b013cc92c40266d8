-- PostgreSQL twin of ../0013_event_search.sql: full-text search of message
-- text (dsh search), kept by triggers on events under the same rule
-- (docs/search.md), computed here by one function, dsh_event_text, over
-- the json type (-> takes the last of duplicate keys, as JSON.parse does;
-- dsh_usage_json, migration 0012, reads the \u0000 and lone-surrogate
-- escapes PostgreSQL's text cannot hold as U+FDD0 and U+FDD1).
--
-- The index is a tsvector per event under the 'simple' configuration (no
-- stemming, no stop words: case folding only) over the text with every
-- character that is not a letter or digit replaced by a space, so that its
-- words are the words SQLite's unicode61 tokenizer cuts (PostgreSQL's
-- parser would otherwise keep "x.y" or an e-mail address as one word).

CREATE TABLE event_search (
    session_id text COLLATE "C" NOT NULL,
    seq        bigint NOT NULL,
    vector     tsvector NOT NULL,
    PRIMARY KEY (session_id, seq)
);

CREATE INDEX event_search_vector ON event_search USING gin (vector);

-- An event's searched text: NULL for an event type that is not searched.
CREATE FUNCTION dsh_event_text(etype text, data text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN etype IN ('user/message', 'assistant/message', 'tool/result') THEN coalesce((
        SELECT string_agg(p.t, E'\n' ORDER BY p.o1, p.o2) FROM (
            SELECT b.o AS o1, 0::bigint AS o2, b.v ->> 'text' AS t
              FROM json_array_elements(CASE WHEN json_typeof(m.msg -> 'content') = 'array' THEN m.msg -> 'content' END)
                   WITH ORDINALITY AS b(v, o)
             WHERE json_typeof(b.v) = 'object'
               AND json_typeof(b.v -> 'type') = 'string' AND b.v ->> 'type' = 'text'
               AND json_typeof(b.v -> 'text') = 'string'
            UNION ALL
            SELECT b.o, i.o, i.v ->> 'text'
              FROM json_array_elements(CASE WHEN json_typeof(m.msg -> 'content') = 'array' THEN m.msg -> 'content' END)
                   WITH ORDINALITY AS b(v, o),
                   json_array_elements(CASE WHEN json_typeof(b.v) = 'object' AND json_typeof(b.v -> 'content') = 'array'
                                            THEN b.v -> 'content' END) WITH ORDINALITY AS i(v, o)
             WHERE json_typeof(b.v -> 'type') = 'string' AND b.v ->> 'type' = 'tool-result'
               AND json_typeof(i.v) = 'object'
               AND json_typeof(i.v -> 'type') = 'string' AND i.v ->> 'type' = 'text'
               AND json_typeof(i.v -> 'text') = 'string'
        ) AS p), '') END
      FROM (SELECT CASE WHEN json_typeof(d) IS DISTINCT FROM 'object' THEN NULL
                        WHEN etype = 'user/message' THEN d
                        WHEN json_typeof(d -> 'message') = 'object' THEN d -> 'message' END AS msg
              FROM (SELECT dsh_usage_json(data) AS d) AS j) AS m
$$;

-- The index entry of a text. A tsvector holds at most 1 MB: a text whose
-- words overflow it (hundreds of kilobytes of distinct words) is indexed
-- by its first 65,536 characters (docs/search.md, "Engine differences").
CREATE FUNCTION dsh_search_vector(t text) RETURNS tsvector LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    IF octet_length(t) < 131072 THEN
        RETURN to_tsvector('simple', regexp_replace(t, '[^[:alnum:]]+', ' ', 'g'));
    END IF;
    BEGIN
        RETURN to_tsvector('simple', regexp_replace(t, '[^[:alnum:]]+', ' ', 'g'));
    EXCEPTION WHEN program_limit_exceeded THEN
        RETURN to_tsvector('simple', regexp_replace(left(t, 65536), '[^[:alnum:]]+', ' ', 'g'));
    END;
END $$;

CREATE FUNCTION dsh_search_add() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO event_search AS s (session_id, seq, vector)
    SELECT session_id, seq, dsh_search_vector(dsh_event_text(type, data))
      FROM new_rows WHERE type IN ('user/message', 'assistant/message', 'tool/result')
    ON CONFLICT (session_id, seq) DO UPDATE SET vector = excluded.vector;
    RETURN NULL;
END $$;

CREATE FUNCTION dsh_search_remove() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM event_search AS s USING old_rows AS o
     WHERE s.session_id = o.session_id AND s.seq = o.seq;
    RETURN NULL;
END $$;

CREATE FUNCTION dsh_search_clear() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM event_search;
    RETURN NULL;
END $$;

CREATE TRIGGER events_search_insert AFTER INSERT ON events
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION dsh_search_add();

CREATE TRIGGER events_search_delete AFTER DELETE ON events
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION dsh_search_remove();

-- dsh never updates an event; another writer's update removes the old
-- entries, then adds the new ones (triggers of one event fire in name
-- order).
CREATE TRIGGER events_search_update_1_old AFTER UPDATE ON events
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION dsh_search_remove();

CREATE TRIGGER events_search_update_2_new AFTER UPDATE ON events
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION dsh_search_add();

CREATE TRIGGER events_search_truncate AFTER TRUNCATE ON events
    FOR EACH STATEMENT EXECUTE FUNCTION dsh_search_clear();

-- The back-fill: the searched events of the sessions already stored, a chunk
-- of sessions at a time (dsh reports the progress).
-- dsh:backfill per chunk of sessions (ids in dsh_backfill_ids)
INSERT INTO event_search (session_id, seq, vector)
SELECT session_id, seq, dsh_search_vector(dsh_event_text(type, data))
  FROM events
 WHERE type IN ('user/message', 'assistant/message', 'tool/result')
   AND session_id IN (SELECT id FROM dsh_backfill_ids);
