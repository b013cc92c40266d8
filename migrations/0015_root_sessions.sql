-- The root sessions (no parentSession) in (createdAt, id) order as one
-- index range (backend.SessionLister's RootHeaders, dsh serve's front
-- page): without it, listing the roots scans every session and sorts the
-- roots, a cost that follows the store, not the page.
CREATE INDEX sessions_roots
    ON sessions (created_at, id)
    WHERE parent_session IS NULL;
