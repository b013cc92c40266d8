-- PostgreSQL twin of ../0016_event_text_one_pass.sql: dsh_event_text gives
-- the same text (docs/search.md's rule; nothing is re-indexed) at about a
-- seventh of the cost. 0013's was a SQL function whose query (two
-- set-returning scans, a UNION ALL and an ordered string_agg over the json
-- type, where each -> parses the text again) PostgreSQL set up and tore
-- down on every call: most of what the search index added to an import.
--
-- This one is PL/pgSQL over jsonb: the data is converted once, and the
-- loops over the content arrays are plain expressions, with no query
-- executed per event. jsonb keeps the last of duplicate keys, as JSON.parse
-- does, and array order. What jsonb cannot hold though json can (a number
-- beyond numeric's range, such as 1e1000000) makes the conversion fail, and
-- such an event's text is read by 0013's function, kept as
-- dsh_event_text_json.

ALTER FUNCTION dsh_event_text(text, text) RENAME TO dsh_event_text_json;

-- data as jsonb, NULL when it is not JSON jsonb can hold (the escapes
-- text cannot hold read as dsh_usage_json reads them).
CREATE FUNCTION dsh_event_jsonb(data text) RETURNS jsonb LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    IF strpos(data, '\u') > 0 THEN
        data := regexp_replace(regexp_replace(data, '\\u0000', '\\uFDD0', 'g'),
                               '\\u[dD][89a-fA-F][0-9a-fA-F]{2}', '\\uFDD1', 'g');
    END IF;
    RETURN data::jsonb;
EXCEPTION WHEN others THEN
    RETURN NULL;
END $$;

-- An event's searched text: NULL for an event type that is not searched.
CREATE FUNCTION dsh_event_text(etype text, data text) RETURNS text LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    d     jsonb;
    msg   jsonb;
    c     jsonb;
    b     jsonb;
    ic    jsonb;
    i     jsonb;
    parts text[] := '{}';
BEGIN
    IF etype NOT IN ('user/message', 'assistant/message', 'tool/result') THEN
        RETURN NULL;
    END IF;
    d := dsh_event_jsonb(data);
    IF d IS NULL THEN
        RETURN dsh_event_text_json(etype, data);
    END IF;
    IF jsonb_typeof(d) <> 'object' THEN
        RETURN '';
    END IF;
    msg := CASE WHEN etype = 'user/message' THEN d WHEN jsonb_typeof(d -> 'message') = 'object' THEN d -> 'message' END;
    c := msg -> 'content';
    IF jsonb_typeof(c) IS DISTINCT FROM 'array' THEN
        RETURN '';
    END IF;
    FOR k IN 0 .. jsonb_array_length(c) - 1 LOOP
        b := c -> k;
        IF jsonb_typeof(b) <> 'object' OR jsonb_typeof(b -> 'type') IS DISTINCT FROM 'string' THEN
            CONTINUE;
        END IF;
        IF b ->> 'type' = 'text' THEN
            IF jsonb_typeof(b -> 'text') = 'string' THEN
                parts := parts || (b ->> 'text');
            END IF;
        ELSIF b ->> 'type' = 'tool-result' AND jsonb_typeof(b -> 'content') = 'array' THEN
            ic := b -> 'content';
            FOR n IN 0 .. jsonb_array_length(ic) - 1 LOOP
                i := ic -> n;
                IF jsonb_typeof(i) = 'object' AND jsonb_typeof(i -> 'type') = 'string' AND i ->> 'type' = 'text'
                   AND jsonb_typeof(i -> 'text') = 'string' THEN
                    parts := parts || (i ->> 'text');
                END IF;
            END LOOP;
        END IF;
    END LOOP;
    RETURN array_to_string(parts, E'\n');
END $$;
