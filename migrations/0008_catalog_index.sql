-- The catalog index: what a --dsh-compat 0.1.7 listing reads of a log (a
-- parent's own subagent/catalog facts, the tagged session/end-seed that
-- sets a later format's cut, and the descriptors that are a child's
-- evidence for its parent's V3->V4 back-fill) as an index range over those
-- few rows, never a pass over the whole log. Being an index, it is exact
-- after every write (append, import, repair, cache rebuild) by
-- construction. Queries name exactly this IN list to use it.
CREATE INDEX events_catalog
    ON events (session_id, seq)
    WHERE type IN ('session/end-seed', 'subagent/catalog', 'subagent/descriptor');
