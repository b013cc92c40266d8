-- Migration 0013's views again, one json_each pass per JSON value: the same
-- text (docs/search.md's rule, search.Text's; nothing is re-indexed), at
-- about a third of the cost an import paid for it. 0013's views looked up
-- each member of a block in a json_each pass of its own, each sorted by id
-- (ORDER BY id DESC LIMIT 1, the last of duplicate keys), and walked the
-- content array twice (once per kind of block), so a message's JSON was
-- parsed and sorted some ten times.
--
-- Here a level's "last member named k" is one aggregate over one json_each
-- pass: max() of the member's id zero-padded to 12 digits (ids are
-- increasing in text order, and below 10^12) followed by 's' and the value
-- when the value has the type wanted, 'n' when not. Stripping the 12
-- digits leaves 's...' (the value), 'n' (the last such member is of another
-- type: not used) or NULL (no such member). One pass over a block's members
-- gives its type, text and content; one pass over a tool-result's item
-- gives the item's type and text. Only json_each and functions SQLite 3.40
-- knows are used, so that the system sqlite3 can still read and write the
-- store (and its writes are indexed).

DROP VIEW event_text_of;
DROP VIEW event_content_of;

-- An event's message content (the array, NULL when there is none).
CREATE VIEW event_content_of AS
SELECT e.session_id AS session_id, e.seq AS seq,
       (SELECT CASE WHEN x.type = 'array' THEN x.value END
          FROM (SELECT type, value, max(id) FROM json_each(CASE
                    WHEN NOT json_valid(e.data) OR json_type(e.data) <> 'object' THEN NULL
                    WHEN e.type = 'user/message' THEN e.data
                    ELSE (SELECT CASE WHEN m.type = 'object' THEN m.value END
                            FROM (SELECT type, value, max(id) FROM json_each(e.data) WHERE key = 'message') AS m)
                END) WHERE key = 'content') AS x) AS content
  FROM events AS e
 WHERE e.type IN ('user/message', 'assistant/message', 'tool/result');

CREATE VIEW event_text_of AS
SELECT c.session_id AS session_id, c.seq AS seq,
       coalesce((
           SELECT group_concat(p.t, char(10)) FROM (
               SELECT bl.id AS o1, i.id AS o2,
                      CASE WHEN bl.type = 'stext' AND substr(bl.text, 1, 1) = 's' THEN substr(bl.text, 2)
                           WHEN bl.type = 'stool-result'
                            AND substr(max(CASE WHEN y.key = 'type' THEN printf('%012d', y.id) || CASE WHEN y.type = 'text' THEN 's' || y.value ELSE 'n' END END), 13) = 'stext'
                            AND substr(max(CASE WHEN y.key = 'text' THEN printf('%012d', y.id) || CASE WHEN y.type = 'text' THEN 's' || y.value ELSE 'n' END END), 13, 1) = 's'
                           THEN substr(max(CASE WHEN y.key = 'text' THEN printf('%012d', y.id) || CASE WHEN y.type = 'text' THEN 's' || y.value ELSE 'n' END END), 14)
                      END AS t
                 FROM (SELECT b.id AS id,
                              substr(max(CASE WHEN x.key = 'type' THEN printf('%012d', x.id) || CASE WHEN x.type = 'text' THEN 's' || x.value ELSE 'n' END END), 13) AS type,
                              substr(max(CASE WHEN x.key = 'text' THEN printf('%012d', x.id) || CASE WHEN x.type = 'text' THEN 's' || x.value ELSE 'n' END END), 13) AS text,
                              substr(max(CASE WHEN x.key = 'content' THEN printf('%012d', x.id) || CASE WHEN x.type = 'array' THEN 's' || x.value ELSE 'n' END END), 13) AS content
                         FROM json_each(c.content) AS b, json_each(CASE WHEN b.type = 'object' THEN b.value END) AS x
                        GROUP BY b.id) AS bl
                 LEFT JOIN json_each(CASE WHEN bl.type = 'stool-result' AND substr(bl.content, 1, 1) = 's' THEN substr(bl.content, 2) END) AS i
                 LEFT JOIN json_each(CASE WHEN i.type = 'object' THEN i.value END) AS y
                GROUP BY bl.id, i.id
                ORDER BY 1, 2
           ) AS p), '') AS text
  FROM event_content_of AS c;
