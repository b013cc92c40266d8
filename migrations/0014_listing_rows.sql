-- Resolved listing rows (backend.ResolvedRowReader, ResolvedRowWriter): one
-- row per subagent child (origin 'subagent', a parent), keyed for one
-- parent's children in (created_at, id) order, holding the answer the
-- listing's ladder gives for the child when nothing is live: kind, reason,
-- mode and label. hasChildren is not stored: a reader asks this table's
-- own index (it holds every subagent child), as the listing asks sessions.
--
-- resolver is who resolved the row: dsh's profile, listing rules and
-- projection registry versions (subagent.ResolvedRowsStamp). NULL = stale:
-- the row says nothing and a listing takes the ladder. A reader uses a row
-- only when resolver equals its own stamp, so a row resolved by another dsh
-- (other units, other rules) is never read as current.
--
-- The rows exist and go stale by the triggers below, whoever writes: a
-- subagent child's sessions row inserted adds its row (stale); any change
-- to the child's sessions row, its events, torn tail, damaged rest or
-- checkpoint record makes its row stale, and a header change that moves it
-- (id, parent, origin, createdAt) puts it in its new place. Only dsh's
-- writers fill a row in (subagent.RefreshResolvedRows): in a write
-- transaction that reads what the ladder reads and stamps the answer.
CREATE TABLE listing_rows (
    id         TEXT PRIMARY KEY,
    parent     TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    resolver   TEXT,
    kind       TEXT,
    reason     TEXT,
    mode       TEXT,
    label      TEXT
) STRICT;

-- One parent's rows are one range of this index, which holds every column
-- a listing reads; the same index answers "has a subagent child".
CREATE INDEX listing_rows_by_parent
    ON listing_rows (parent, created_at, id, resolver, kind, reason, mode, label);

-- Every subagent child a store holds gets its (stale) row.
INSERT INTO listing_rows (id, parent, created_at)
    SELECT id, parent_session, created_at FROM sessions
     WHERE origin = 'subagent' AND parent_session IS NOT NULL;

CREATE TRIGGER listing_rows_session_insert AFTER INSERT ON sessions
WHEN NEW.origin = 'subagent' AND NEW.parent_session IS NOT NULL
BEGIN
    INSERT OR REPLACE INTO listing_rows (id, parent, created_at)
        VALUES (NEW.id, NEW.parent_session, NEW.created_at);
END;

CREATE TRIGGER listing_rows_session_move
AFTER UPDATE OF id, parent_session, origin, created_at ON sessions
BEGIN
    DELETE FROM listing_rows WHERE id = OLD.id;
    INSERT OR REPLACE INTO listing_rows (id, parent, created_at)
        SELECT NEW.id, NEW.parent_session, NEW.created_at
         WHERE NEW.origin = 'subagent' AND NEW.parent_session IS NOT NULL;
END;

CREATE TRIGGER listing_rows_session_update AFTER UPDATE ON sessions
BEGIN
    UPDATE listing_rows SET resolver = NULL WHERE id = NEW.id AND resolver IS NOT NULL;
END;

CREATE TRIGGER listing_rows_session_delete AFTER DELETE ON sessions
BEGIN
    DELETE FROM listing_rows WHERE id = OLD.id;
END;

CREATE TRIGGER listing_rows_events_insert AFTER INSERT ON events
BEGIN
    UPDATE listing_rows SET resolver = NULL WHERE id = NEW.session_id AND resolver IS NOT NULL;
END;

CREATE TRIGGER listing_rows_events_update AFTER UPDATE ON events
BEGIN
    UPDATE listing_rows SET resolver = NULL
     WHERE id IN (OLD.session_id, NEW.session_id) AND resolver IS NOT NULL;
END;

CREATE TRIGGER listing_rows_events_delete AFTER DELETE ON events
BEGIN
    UPDATE listing_rows SET resolver = NULL WHERE id = OLD.session_id AND resolver IS NOT NULL;
END;

CREATE TRIGGER listing_rows_torn_tails_insert AFTER INSERT ON torn_tails
BEGIN
    UPDATE listing_rows SET resolver = NULL WHERE id = NEW.session_id AND resolver IS NOT NULL;
END;

CREATE TRIGGER listing_rows_torn_tails_update AFTER UPDATE ON torn_tails
BEGIN
    UPDATE listing_rows SET resolver = NULL
     WHERE id IN (OLD.session_id, NEW.session_id) AND resolver IS NOT NULL;
END;

CREATE TRIGGER listing_rows_torn_tails_delete AFTER DELETE ON torn_tails
BEGIN
    UPDATE listing_rows SET resolver = NULL WHERE id = OLD.session_id AND resolver IS NOT NULL;
END;

CREATE TRIGGER listing_rows_damaged_logs_insert AFTER INSERT ON damaged_logs
BEGIN
    UPDATE listing_rows SET resolver = NULL WHERE id = NEW.session_id AND resolver IS NOT NULL;
END;

CREATE TRIGGER listing_rows_damaged_logs_update AFTER UPDATE ON damaged_logs
BEGIN
    UPDATE listing_rows SET resolver = NULL
     WHERE id IN (OLD.session_id, NEW.session_id) AND resolver IS NOT NULL;
END;

CREATE TRIGGER listing_rows_damaged_logs_delete AFTER DELETE ON damaged_logs
BEGIN
    UPDATE listing_rows SET resolver = NULL WHERE id = OLD.session_id AND resolver IS NOT NULL;
END;

CREATE TRIGGER listing_rows_checkpoints_insert AFTER INSERT ON projection_checkpoints
BEGIN
    UPDATE listing_rows SET resolver = NULL WHERE id = NEW.session_id AND resolver IS NOT NULL;
END;

CREATE TRIGGER listing_rows_checkpoints_update AFTER UPDATE ON projection_checkpoints
BEGIN
    UPDATE listing_rows SET resolver = NULL
     WHERE id IN (OLD.session_id, NEW.session_id) AND resolver IS NOT NULL;
END;

CREATE TRIGGER listing_rows_checkpoints_delete AFTER DELETE ON projection_checkpoints
BEGIN
    UPDATE listing_rows SET resolver = NULL WHERE id = OLD.session_id AND resolver IS NOT NULL;
END;
