-- Resolved 0.1.7 catalogs (backend.CatalogViewReader, CatalogViewWriter):
-- for each session, what a --dsh-compat 0.1.7 listing computes from its own
-- log, so that a listing walks these instead of reading every log of the
-- tree (subagent/catalog_views.go):
--
--   reason    'corrupt' when DSH refuses the session's catalog whatever
--             its children say (its log fails to read or validate, its own
--             facts are refused); NULL when it reads.
--   backfill  1 for a V0-V3 session (version < 4): its catalog is its own
--             entries completed, when listed, with the evidence of its
--             subagent children as they then stand (DSH's V3->V4 back-fill,
--             catalog.Complete); 0 for a V4 session: its own entries are
--             its catalog.
--   ev_count, ev_descriptor
--             the session's own evidence for its parent's back-fill: how
--             many own subagent/descriptor events it has and the first's
--             payload (0 and NULL when its log cannot be read or that
--             descriptor is malformed).
--
-- and its own entries in catalog order (catalog_view_entries). Everything
-- here is derived from the session's own log and header alone: a write to
-- one session never touches another's view.
--
-- resolver is who resolved the view (subagent.CatalogViewsStamp). NULL =
-- stale: a listing computes that session's part from its log. A reader
-- uses a view only when resolver equals its own stamp.
--
-- The views exist and go stale by the triggers below, whoever writes: a
-- sessions row inserted adds its (stale) view; any change to the session's
-- sessions row, events, torn tail or damaged rest makes it stale. Only
-- dsh's writers fill a view in (subagent.RefreshResolvedRowsIn, in their
-- write transaction).
CREATE TABLE catalog_views (
    id            TEXT PRIMARY KEY,
    resolver      TEXT,
    reason        TEXT,
    backfill      INTEGER NOT NULL DEFAULT 0 CHECK (backfill IN (0, 1)),
    ev_count      INTEGER NOT NULL DEFAULT 0,
    ev_descriptor TEXT
) STRICT;

-- A view's own entries, valid only while its view's resolver is current (a
-- resolution replaces them all).
CREATE TABLE catalog_view_entries (
    parent     TEXT NOT NULL,
    ord        INTEGER NOT NULL,
    child      TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    mode       TEXT NOT NULL,
    label      TEXT,
    PRIMARY KEY (parent, ord)
) STRICT, WITHOUT ROWID;

-- Every session a store holds gets its (stale) view.
INSERT INTO catalog_views (id) SELECT id FROM sessions;

CREATE TRIGGER catalog_views_session_insert AFTER INSERT ON sessions
BEGIN
    INSERT OR REPLACE INTO catalog_views (id) VALUES (NEW.id);
END;

CREATE TRIGGER catalog_views_session_update AFTER UPDATE ON sessions
BEGIN
    UPDATE catalog_views SET resolver = NULL WHERE id = NEW.id AND resolver IS NOT NULL;
END;

CREATE TRIGGER catalog_views_session_rename AFTER UPDATE OF id ON sessions
WHEN OLD.id <> NEW.id
BEGIN
    DELETE FROM catalog_views WHERE id = OLD.id;
    DELETE FROM catalog_view_entries WHERE parent = OLD.id;
    INSERT OR REPLACE INTO catalog_views (id) VALUES (NEW.id);
END;

CREATE TRIGGER catalog_views_session_delete AFTER DELETE ON sessions
BEGIN
    DELETE FROM catalog_views WHERE id = OLD.id;
    DELETE FROM catalog_view_entries WHERE parent = OLD.id;
END;

CREATE TRIGGER catalog_views_events_insert AFTER INSERT ON events
BEGIN
    UPDATE catalog_views SET resolver = NULL WHERE id = NEW.session_id AND resolver IS NOT NULL;
END;

CREATE TRIGGER catalog_views_events_update AFTER UPDATE ON events
BEGIN
    UPDATE catalog_views SET resolver = NULL
     WHERE id IN (OLD.session_id, NEW.session_id) AND resolver IS NOT NULL;
END;

CREATE TRIGGER catalog_views_events_delete AFTER DELETE ON events
BEGIN
    UPDATE catalog_views SET resolver = NULL WHERE id = OLD.session_id AND resolver IS NOT NULL;
END;

CREATE TRIGGER catalog_views_torn_tails_insert AFTER INSERT ON torn_tails
BEGIN
    UPDATE catalog_views SET resolver = NULL WHERE id = NEW.session_id AND resolver IS NOT NULL;
END;

CREATE TRIGGER catalog_views_torn_tails_update AFTER UPDATE ON torn_tails
BEGIN
    UPDATE catalog_views SET resolver = NULL
     WHERE id IN (OLD.session_id, NEW.session_id) AND resolver IS NOT NULL;
END;

CREATE TRIGGER catalog_views_torn_tails_delete AFTER DELETE ON torn_tails
BEGIN
    UPDATE catalog_views SET resolver = NULL WHERE id = OLD.session_id AND resolver IS NOT NULL;
END;

CREATE TRIGGER catalog_views_damaged_logs_insert AFTER INSERT ON damaged_logs
BEGIN
    UPDATE catalog_views SET resolver = NULL WHERE id = NEW.session_id AND resolver IS NOT NULL;
END;

CREATE TRIGGER catalog_views_damaged_logs_update AFTER UPDATE ON damaged_logs
BEGIN
    UPDATE catalog_views SET resolver = NULL
     WHERE id IN (OLD.session_id, NEW.session_id) AND resolver IS NOT NULL;
END;

CREATE TRIGGER catalog_views_damaged_logs_delete AFTER DELETE ON damaged_logs
BEGIN
    UPDATE catalog_views SET resolver = NULL WHERE id = OLD.session_id AND resolver IS NOT NULL;
END;
