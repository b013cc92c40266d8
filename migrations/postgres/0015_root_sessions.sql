-- The root sessions (no parentSession) in (createdAt, id) order as one
-- index range, as ../0015_root_sessions.sql: without it, listing the
-- roots is a sequential scan of sessions and a sort of the roots (at a
-- million sessions, a pass over 250 MB per page of dsh serve).
CREATE INDEX sessions_roots
    ON sessions (created_at, id)
    WHERE parent_session IS NULL;
