-- Resolved listing rows: the PostgreSQL twin of ../0014_listing_rows.sql
-- (read it for what the table holds and who writes it). The same rows go
-- stale on the same writes: the sessions row by a row trigger, the tables
-- keyed by session by statement triggers over their transition tables (an
-- import's COPY is one statement), and TRUNCATE of any of them makes every
-- row stale (of sessions: removes them). The triggers run their statements
-- through EXECUTE, planned afresh each time, for the reason 0007 gives.
--
-- Unlike SQLite's, these triggers write a child's row even when it is
-- stale already: the write takes the row's lock until the writer commits,
-- and LockResolvedRows takes the same lock before it reads what it
-- resolves, so a write to a child's inputs either commits before that read
-- (and is read) or waits for the resolution to commit (and makes the row
-- stale after it). SQLite has one writer at a time, so a stale row need
-- not be written again there.
CREATE TABLE listing_rows (
    id         text PRIMARY KEY,
    parent     text NOT NULL,
    created_at bigint NOT NULL,
    resolver   text,
    kind       text,
    reason     text,
    mode       text,
    label      text
);

CREATE INDEX listing_rows_by_parent
    ON listing_rows (parent, created_at, id) INCLUDE (resolver, kind, reason, mode, label);

INSERT INTO listing_rows (id, parent, created_at)
    SELECT id, parent_session, created_at FROM sessions
     WHERE origin = 'subagent' AND parent_session IS NOT NULL;

CREATE FUNCTION dsh_listing_rows_session() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.id IS NOT DISTINCT FROM NEW.id
       AND OLD.parent_session IS NOT DISTINCT FROM NEW.parent_session
       AND OLD.origin IS NOT DISTINCT FROM NEW.origin
       AND OLD.created_at IS NOT DISTINCT FROM NEW.created_at THEN
        EXECUTE 'UPDATE listing_rows SET resolver = NULL WHERE id = $1' USING NEW.id;
        RETURN NULL;
    END IF;
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        EXECUTE 'DELETE FROM listing_rows WHERE id = $1' USING OLD.id;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') AND NEW.origin = 'subagent' AND NEW.parent_session IS NOT NULL THEN
        EXECUTE 'INSERT INTO listing_rows (id, parent, created_at) VALUES ($1, $2, $3)
                 ON CONFLICT (id) DO UPDATE SET parent = EXCLUDED.parent,
                     created_at = EXCLUDED.created_at, resolver = NULL'
          USING NEW.id, NEW.parent_session, NEW.created_at;
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER listing_rows_session AFTER INSERT OR UPDATE OR DELETE ON sessions
    FOR EACH ROW EXECUTE FUNCTION dsh_listing_rows_session();

CREATE FUNCTION dsh_listing_rows_stale_new() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE 'UPDATE listing_rows SET resolver = NULL WHERE id = ANY ($1)'
      USING ARRAY(SELECT DISTINCT session_id FROM new_rows);
    RETURN NULL;
END $$;

CREATE FUNCTION dsh_listing_rows_stale_old() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE 'UPDATE listing_rows SET resolver = NULL WHERE id = ANY ($1)'
      USING ARRAY(SELECT DISTINCT session_id FROM old_rows);
    RETURN NULL;
END $$;

CREATE FUNCTION dsh_listing_rows_stale_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE 'UPDATE listing_rows SET resolver = NULL WHERE id = ANY ($1)'
      USING ARRAY(SELECT session_id FROM old_rows UNION SELECT session_id FROM new_rows);
    RETURN NULL;
END $$;

CREATE FUNCTION dsh_listing_rows_stale_all() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_TABLE_NAME = 'sessions' THEN
        EXECUTE 'DELETE FROM listing_rows';
    ELSE
        EXECUTE 'UPDATE listing_rows SET resolver = NULL';
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER listing_rows_sessions_truncate AFTER TRUNCATE ON sessions
    FOR EACH STATEMENT EXECUTE FUNCTION dsh_listing_rows_stale_all();

CREATE TRIGGER listing_rows_events_insert AFTER INSERT ON events
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION dsh_listing_rows_stale_new();
CREATE TRIGGER listing_rows_events_update AFTER UPDATE ON events
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION dsh_listing_rows_stale_changed();
CREATE TRIGGER listing_rows_events_delete AFTER DELETE ON events
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION dsh_listing_rows_stale_old();
CREATE TRIGGER listing_rows_events_truncate AFTER TRUNCATE ON events
    FOR EACH STATEMENT EXECUTE FUNCTION dsh_listing_rows_stale_all();

CREATE TRIGGER listing_rows_torn_tails_insert AFTER INSERT ON torn_tails
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION dsh_listing_rows_stale_new();
CREATE TRIGGER listing_rows_torn_tails_update AFTER UPDATE ON torn_tails
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION dsh_listing_rows_stale_changed();
CREATE TRIGGER listing_rows_torn_tails_delete AFTER DELETE ON torn_tails
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION dsh_listing_rows_stale_old();
CREATE TRIGGER listing_rows_torn_tails_truncate AFTER TRUNCATE ON torn_tails
    FOR EACH STATEMENT EXECUTE FUNCTION dsh_listing_rows_stale_all();

CREATE TRIGGER listing_rows_damaged_logs_insert AFTER INSERT ON damaged_logs
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION dsh_listing_rows_stale_new();
CREATE TRIGGER listing_rows_damaged_logs_update AFTER UPDATE ON damaged_logs
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION dsh_listing_rows_stale_changed();
CREATE TRIGGER listing_rows_damaged_logs_delete AFTER DELETE ON damaged_logs
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION dsh_listing_rows_stale_old();
CREATE TRIGGER listing_rows_damaged_logs_truncate AFTER TRUNCATE ON damaged_logs
    FOR EACH STATEMENT EXECUTE FUNCTION dsh_listing_rows_stale_all();

CREATE TRIGGER listing_rows_checkpoints_insert AFTER INSERT ON projection_checkpoints
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION dsh_listing_rows_stale_new();
CREATE TRIGGER listing_rows_checkpoints_update AFTER UPDATE ON projection_checkpoints
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION dsh_listing_rows_stale_changed();
CREATE TRIGGER listing_rows_checkpoints_delete AFTER DELETE ON projection_checkpoints
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION dsh_listing_rows_stale_old();
CREATE TRIGGER listing_rows_checkpoints_truncate AFTER TRUNCATE ON projection_checkpoints
    FOR EACH STATEMENT EXECUTE FUNCTION dsh_listing_rows_stale_all();
