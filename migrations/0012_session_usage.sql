-- Token usage kept per session (dsh usage; the rules are docs/usage.md's):
-- event_usage holds one row per event that carries usage, session_usage the
-- per-session, per-model sums a rollup reads without reading any log.
--
-- Both are maintained by triggers on events, so every write path — dsh's
-- appends, imports and repairs, and any other writer — keeps them exact
-- without a change to the Go code, and the back-fill below makes a store
-- written before this migration exact too.
--
-- An event counts when it is one of the session's own (seq at or after the
-- header's seed_length, the inherited prefix a fork copied from its
-- parent being the parent's usage), its type is assistant/message or
-- compaction/summary, its data is valid JSON and the last member named
-- "usage" of data is an object. A kind (inputTokens, outputTokens,
-- cacheReadTokens, reasoningTokens) counts the value of the last member of
-- that name when it is a JSON integer literal in 0..2^53-1; anything else
-- (absent, null, a fraction, an exponent, a string) contributes 0. The model
-- is, for assistant/message, the last data.message.source.model and, for
-- compaction/summary, the last data.model, when each step is an object and
-- the model a string whose JSON text holds no \u followed by a surrogate
-- (D800-DFFF: DSH's JSON.stringify escapes only lone surrogates, which are
-- not Unicode text), 0000 (which PostgreSQL's text cannot hold), FDD0 or
-- FDD1, and whose text holds neither U+FDD0 nor U+FDD1 (the noncharacters
-- PostgreSQL's twin reads those escapes as); "" otherwise. "Last" is JSON.parse's rule for
-- duplicate keys (json_each in text order, the highest id); the escape
-- test reads the first "model" member's text (m.json -> '$.model'), which
-- differs only for a duplicated model key (docs/usage.md).

CREATE TABLE event_usage (
    session_id        TEXT NOT NULL,
    seq               INTEGER NOT NULL,
    model             TEXT NOT NULL,
    input_tokens      INTEGER NOT NULL,
    output_tokens     INTEGER NOT NULL,
    cache_read_tokens INTEGER NOT NULL,
    reasoning_tokens  INTEGER NOT NULL,
    PRIMARY KEY (session_id, seq)
) STRICT, WITHOUT ROWID;

CREATE TABLE session_usage (
    session_id        TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    model             TEXT NOT NULL,
    -- how many events counted
    messages          INTEGER NOT NULL,
    input_tokens      INTEGER NOT NULL,
    output_tokens     INTEGER NOT NULL,
    cache_read_tokens INTEGER NOT NULL,
    reasoning_tokens  INTEGER NOT NULL,
    PRIMARY KEY (session_id, model)
) STRICT, WITHOUT ROWID;

-- The per-event figures of the events inserted so far: the one place the
-- rules above are written for SQLite. The triggers below insert from it by
-- primary key, so a trigger computes one event's figures.
CREATE VIEW event_usage_of AS
SELECT e.session_id AS session_id, e.seq AS seq,
       coalesce(CASE e.type
           WHEN 'assistant/message' THEN
               (SELECT CASE WHEN m.type = 'text' AND (m.json -> '$.model') NOT GLOB '*\u[dD][89abcdefABCDEF]*'
                                                 AND (m.json -> '$.model') NOT GLOB '*\u0000*'
                                                 AND (m.json -> '$.model') NOT GLOB '*\u[fF][dD][dD][01]*'
                                                 AND instr(m.value, char(64976)) = 0 AND instr(m.value, char(64977)) = 0 THEN m.value END FROM json_each(
                   (SELECT CASE WHEN s.type = 'object' THEN s.value END FROM json_each(
                       (SELECT CASE WHEN g.type = 'object' THEN g.value END FROM json_each(e.data) AS g
                         WHERE g.key = 'message' ORDER BY g.id DESC LIMIT 1)) AS s
                     WHERE s.key = 'source' ORDER BY s.id DESC LIMIT 1)) AS m
                 WHERE m.key = 'model' ORDER BY m.id DESC LIMIT 1)
           ELSE
               (SELECT CASE WHEN m.type = 'text' AND (m.json -> '$.model') NOT GLOB '*\u[dD][89abcdefABCDEF]*'
                                                 AND (m.json -> '$.model') NOT GLOB '*\u0000*'
                                                 AND (m.json -> '$.model') NOT GLOB '*\u[fF][dD][dD][01]*'
                                                 AND instr(m.value, char(64976)) = 0 AND instr(m.value, char(64977)) = 0 THEN m.value END FROM json_each(e.data) AS m
                 WHERE m.key = 'model' ORDER BY m.id DESC LIMIT 1)
       END, '') AS model,
       coalesce((SELECT CASE WHEN k.type = 'integer' AND k.value BETWEEN 0 AND 9007199254740991 THEN k.value ELSE 0 END
                   FROM json_each(u.value) AS k WHERE k.key = 'inputTokens' ORDER BY k.id DESC LIMIT 1), 0) AS input_tokens,
       coalesce((SELECT CASE WHEN k.type = 'integer' AND k.value BETWEEN 0 AND 9007199254740991 THEN k.value ELSE 0 END
                   FROM json_each(u.value) AS k WHERE k.key = 'outputTokens' ORDER BY k.id DESC LIMIT 1), 0) AS output_tokens,
       coalesce((SELECT CASE WHEN k.type = 'integer' AND k.value BETWEEN 0 AND 9007199254740991 THEN k.value ELSE 0 END
                   FROM json_each(u.value) AS k WHERE k.key = 'cacheReadTokens' ORDER BY k.id DESC LIMIT 1), 0) AS cache_read_tokens,
       coalesce((SELECT CASE WHEN k.type = 'integer' AND k.value BETWEEN 0 AND 9007199254740991 THEN k.value ELSE 0 END
                   FROM json_each(u.value) AS k WHERE k.key = 'reasoningTokens' ORDER BY k.id DESC LIMIT 1), 0) AS reasoning_tokens
  FROM events AS e,
       -- json_each of invalid JSON is an error: such data has no usage
       json_each(CASE WHEN json_valid(e.data) THEN e.data END) AS u
 WHERE e.type IN ('assistant/message', 'compaction/summary')
   AND e.seq >= coalesce((SELECT seed_length FROM sessions WHERE id = e.session_id), 0)
   AND u.key = 'usage'
   AND u.id = (SELECT max(l.id) FROM json_each(e.data) AS l WHERE l.key = 'usage')
   AND u.type = 'object';

INSERT INTO event_usage (session_id, seq, model, input_tokens, output_tokens, cache_read_tokens, reasoning_tokens)
SELECT session_id, seq, model, input_tokens, output_tokens, cache_read_tokens, reasoning_tokens
  FROM event_usage_of;

INSERT INTO session_usage (session_id, model, messages, input_tokens, output_tokens, cache_read_tokens, reasoning_tokens)
SELECT session_id, model, count(*), sum(input_tokens), sum(output_tokens), sum(cache_read_tokens), sum(reasoning_tokens)
  FROM event_usage GROUP BY session_id, model;

CREATE TRIGGER events_usage_insert AFTER INSERT ON events
WHEN NEW.type IN ('assistant/message', 'compaction/summary')
BEGIN
    INSERT INTO event_usage (session_id, seq, model, input_tokens, output_tokens, cache_read_tokens, reasoning_tokens)
    SELECT session_id, seq, model, input_tokens, output_tokens, cache_read_tokens, reasoning_tokens
      FROM event_usage_of WHERE session_id = NEW.session_id AND seq = NEW.seq;
END;

CREATE TRIGGER events_usage_delete AFTER DELETE ON events
WHEN OLD.type IN ('assistant/message', 'compaction/summary')
BEGIN
    DELETE FROM event_usage WHERE session_id = OLD.session_id AND seq = OLD.seq;
END;

-- dsh never updates an event; another writer's update is a delete and an
-- insert to the figures.
CREATE TRIGGER events_usage_update AFTER UPDATE ON events
BEGIN
    DELETE FROM event_usage WHERE session_id = OLD.session_id AND seq = OLD.seq;
    INSERT INTO event_usage (session_id, seq, model, input_tokens, output_tokens, cache_read_tokens, reasoning_tokens)
    SELECT session_id, seq, model, input_tokens, output_tokens, cache_read_tokens, reasoning_tokens
      FROM event_usage_of WHERE session_id = NEW.session_id AND seq = NEW.seq;
END;

CREATE TRIGGER event_usage_add AFTER INSERT ON event_usage
BEGIN
    INSERT INTO session_usage (session_id, model, messages, input_tokens, output_tokens, cache_read_tokens, reasoning_tokens)
    VALUES (NEW.session_id, NEW.model, 1, NEW.input_tokens, NEW.output_tokens, NEW.cache_read_tokens, NEW.reasoning_tokens)
    ON CONFLICT (session_id, model) DO UPDATE SET
        messages          = messages + 1,
        input_tokens      = input_tokens + excluded.input_tokens,
        output_tokens     = output_tokens + excluded.output_tokens,
        cache_read_tokens = cache_read_tokens + excluded.cache_read_tokens,
        reasoning_tokens  = reasoning_tokens + excluded.reasoning_tokens;
END;

CREATE TRIGGER event_usage_subtract AFTER DELETE ON event_usage
BEGIN
    UPDATE session_usage SET
        messages          = messages - 1,
        input_tokens      = input_tokens - OLD.input_tokens,
        output_tokens     = output_tokens - OLD.output_tokens,
        cache_read_tokens = cache_read_tokens - OLD.cache_read_tokens,
        reasoning_tokens  = reasoning_tokens - OLD.reasoning_tokens
     WHERE session_id = OLD.session_id AND model = OLD.model;
    DELETE FROM session_usage WHERE session_id = OLD.session_id AND model = OLD.model AND messages = 0;
END;

-- dsh never changes a header; another writer's change of the cut moves
-- events between the inherited prefix and the session's own.
CREATE TRIGGER sessions_usage_cut_update AFTER UPDATE OF seed_length ON sessions
BEGIN
    DELETE FROM event_usage WHERE session_id = NEW.id;
    INSERT INTO event_usage (session_id, seq, model, input_tokens, output_tokens, cache_read_tokens, reasoning_tokens)
    SELECT session_id, seq, model, input_tokens, output_tokens, cache_read_tokens, reasoning_tokens
      FROM event_usage_of WHERE session_id = NEW.id;
END;
