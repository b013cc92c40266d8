-- PostgreSQL twin of ../0012_session_usage.sql: token usage kept per
-- session by triggers on events, under the same rules (docs/usage.md; a
-- session's own events only, seq >= seed_length),
-- computed here by one function, dsh_event_usage. The json type (not
-- jsonb) keeps each number as written, so an integer literal is told from
-- 1e3 or 10.0 as SQLite's json_each tells it, and -> takes the last of
-- duplicate keys, as JSON.parse does. A model name whose JSON text holds
-- \u followed by a surrogate, 0000, FDD0 or FDD1, or whose text holds
-- U+FDD0 or U+FDD1, counts as "" (see dsh_usage_json).

CREATE TABLE session_usage (
    session_id        text COLLATE "C" NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    model             text COLLATE "C" NOT NULL,
    messages          bigint NOT NULL,
    input_tokens      bigint NOT NULL,
    output_tokens     bigint NOT NULL,
    cache_read_tokens bigint NOT NULL,
    reasoning_tokens  bigint NOT NULL,
    PRIMARY KEY (session_id, model)
);

-- data as json, NULL when it is not valid JSON (PostgreSQL 15 has no
-- pg_input_is_valid; the handler costs a subtransaction per call, paid
-- only by the two event types that carry usage). PostgreSQL's json
-- operators fail on a \u0000 or lone-surrogate escape anywhere on their
-- way through the text, which JSON allows and a log may hold (a tool's
-- output): each such escape is read as the noncharacter U+FDD0 (NUL) or
-- U+FDD1 (a surrogate) instead, which no count and no model name the
-- rules keep can hold.
CREATE FUNCTION dsh_usage_json(data text) RETURNS json LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    IF strpos(data, '\u') > 0 THEN
        data := regexp_replace(regexp_replace(data, '\\u0000', '\\uFDD0', 'g'),
                               '\\u[dD][89a-fA-F][0-9a-fA-F]{2}', '\\uFDD1', 'g');
    END IF;
    RETURN data::json;
EXCEPTION WHEN others THEN
    RETURN NULL;
END $$;

CREATE FUNCTION dsh_usage_kind(u json, k text) RETURNS bigint LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN json_typeof(u -> k) = 'number'
                 AND (u ->> k) ~ '^-?(0|[1-9][0-9]*)$'
                 AND (u ->> k)::numeric BETWEEN 0 AND 9007199254740991
            THEN (u ->> k)::bigint ELSE 0 END
$$;

-- One event's figures: no row when it carries no usage.
CREATE FUNCTION dsh_event_usage(etype text, data text,
    OUT model text, OUT input_tokens bigint, OUT output_tokens bigint,
    OUT cache_read_tokens bigint, OUT reasoning_tokens bigint)
RETURNS SETOF record LANGUAGE sql IMMUTABLE AS $$
    SELECT coalesce(CASE WHEN etype = 'assistant/message' THEN
                        CASE WHEN json_typeof(d -> 'message') = 'object'
                              AND json_typeof(d -> 'message' -> 'source') = 'object'
                              AND json_typeof(d -> 'message' -> 'source' -> 'model') = 'string'
                              AND (d -> 'message' -> 'source' -> 'model')::text !~ '\\u[fF][dD][dD][01]'
                              AND strpos(d -> 'message' -> 'source' ->> 'model', U&'\FDD0') = 0
                              AND strpos(d -> 'message' -> 'source' ->> 'model', U&'\FDD1') = 0
                             THEN d -> 'message' -> 'source' ->> 'model' END
                    ELSE
                        CASE WHEN json_typeof(d -> 'model') = 'string'
                              AND (d -> 'model')::text !~ '\\u[fF][dD][dD][01]'
                              AND strpos(d ->> 'model', U&'\FDD0') = 0 AND strpos(d ->> 'model', U&'\FDD1') = 0
                             THEN d ->> 'model' END
                    END, ''),
           dsh_usage_kind(d -> 'usage', 'inputTokens'),
           dsh_usage_kind(d -> 'usage', 'outputTokens'),
           dsh_usage_kind(d -> 'usage', 'cacheReadTokens'),
           dsh_usage_kind(d -> 'usage', 'reasoningTokens')
      FROM (SELECT dsh_usage_json(data) AS d) AS j
     WHERE etype IN ('assistant/message', 'compaction/summary')
       AND json_typeof(d) = 'object'
       AND json_typeof(d -> 'usage') = 'object'
$$;

INSERT INTO session_usage (session_id, model, messages, input_tokens, output_tokens, cache_read_tokens, reasoning_tokens)
SELECT e.session_id, u.model, count(*), sum(u.input_tokens), sum(u.output_tokens), sum(u.cache_read_tokens), sum(u.reasoning_tokens)
  FROM events AS e JOIN sessions AS s ON s.id = e.session_id, dsh_event_usage(e.type, e.data) AS u
 WHERE e.type IN ('assistant/message', 'compaction/summary') AND e.seq >= coalesce(s.seed_length, 0)
 GROUP BY e.session_id, u.model;

CREATE FUNCTION dsh_usage_add() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO session_usage AS t (session_id, model, messages, input_tokens, output_tokens, cache_read_tokens, reasoning_tokens)
    SELECT e.session_id, u.model, count(*), sum(u.input_tokens), sum(u.output_tokens), sum(u.cache_read_tokens), sum(u.reasoning_tokens)
      FROM new_rows AS e JOIN sessions AS s ON s.id = e.session_id, dsh_event_usage(e.type, e.data) AS u
     WHERE e.type IN ('assistant/message', 'compaction/summary') AND e.seq >= coalesce(s.seed_length, 0)
     GROUP BY e.session_id, u.model
    ON CONFLICT (session_id, model) DO UPDATE SET
        messages          = t.messages + excluded.messages,
        input_tokens      = t.input_tokens + excluded.input_tokens,
        output_tokens     = t.output_tokens + excluded.output_tokens,
        cache_read_tokens = t.cache_read_tokens + excluded.cache_read_tokens,
        reasoning_tokens  = t.reasoning_tokens + excluded.reasoning_tokens;
    RETURN NULL;
END $$;

CREATE FUNCTION dsh_usage_subtract() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    WITH gone AS (
        SELECT e.session_id, u.model, count(*) AS messages, sum(u.input_tokens) AS input_tokens,
               sum(u.output_tokens) AS output_tokens, sum(u.cache_read_tokens) AS cache_read_tokens,
               sum(u.reasoning_tokens) AS reasoning_tokens
          FROM old_rows AS e JOIN sessions AS s ON s.id = e.session_id, dsh_event_usage(e.type, e.data) AS u
         WHERE e.type IN ('assistant/message', 'compaction/summary') AND e.seq >= coalesce(s.seed_length, 0)
         GROUP BY e.session_id, u.model)
    UPDATE session_usage AS t SET
        messages          = t.messages - g.messages,
        input_tokens      = t.input_tokens - g.input_tokens,
        output_tokens     = t.output_tokens - g.output_tokens,
        cache_read_tokens = t.cache_read_tokens - g.cache_read_tokens,
        reasoning_tokens  = t.reasoning_tokens - g.reasoning_tokens
      FROM gone AS g
     WHERE t.session_id = g.session_id AND t.model = g.model;
    DELETE FROM session_usage WHERE messages = 0
       AND session_id IN (SELECT session_id FROM old_rows);
    RETURN NULL;
END $$;

CREATE FUNCTION dsh_usage_clear() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM session_usage;
    RETURN NULL;
END $$;

CREATE TRIGGER events_usage_insert AFTER INSERT ON events
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION dsh_usage_add();

CREATE TRIGGER events_usage_delete AFTER DELETE ON events
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION dsh_usage_subtract();

-- dsh never updates an event; another writer's update subtracts the old
-- rows and adds the new ones (two triggers: one may not name both
-- transition tables with the functions above).
CREATE TRIGGER events_usage_update_old AFTER UPDATE ON events
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION dsh_usage_subtract();

CREATE TRIGGER events_usage_update_new AFTER UPDATE ON events
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION dsh_usage_add();

CREATE TRIGGER events_usage_truncate AFTER TRUNCATE ON events
    FOR EACH STATEMENT EXECUTE FUNCTION dsh_usage_clear();

-- dsh never changes a header; another writer's change of the cut moves
-- events between the inherited prefix and the session's own.
CREATE FUNCTION dsh_usage_recut() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM session_usage WHERE session_id = NEW.id;
    INSERT INTO session_usage (session_id, model, messages, input_tokens, output_tokens, cache_read_tokens, reasoning_tokens)
    SELECT e.session_id, u.model, count(*), sum(u.input_tokens), sum(u.output_tokens), sum(u.cache_read_tokens), sum(u.reasoning_tokens)
      FROM events AS e, dsh_event_usage(e.type, e.data) AS u
     WHERE e.session_id = NEW.id AND e.type IN ('assistant/message', 'compaction/summary')
       AND e.seq >= coalesce(NEW.seed_length, 0)
     GROUP BY e.session_id, u.model;
    RETURN NULL;
END $$;

CREATE TRIGGER sessions_usage_cut_update AFTER UPDATE OF seed_length ON sessions
    FOR EACH ROW WHEN (OLD.seed_length IS DISTINCT FROM NEW.seed_length)
    EXECUTE FUNCTION dsh_usage_recut();
