-- Resolved 0.1.7 catalogs: the PostgreSQL twin of ../0017_catalog_views.sql
-- (read it for what the tables hold and who writes them). The same views go
-- stale on the same writes: the sessions row by a row trigger, the tables
-- keyed by session by statement triggers over their transition tables (an
-- import's COPY is one statement), and TRUNCATE of any of them makes every
-- view stale (of sessions: removes them). The triggers run their statements
-- through EXECUTE, planned afresh each time, for the reason 0007 gives.
--
-- As 0014's, these triggers write a session's view even when it is stale
-- already: the write takes the view's lock until the writer commits, and
-- LockCatalogViews takes the same lock before it reads what it resolves,
-- so a write to a session's log either commits before that read (and is
-- read) or waits for the resolution to commit (and makes the view stale
-- after it). A view is derived from its own session alone, so no write
-- ever takes another session's view lock.
CREATE TABLE catalog_views (
    id            text PRIMARY KEY,
    resolver      text,
    reason        text,
    backfill      boolean NOT NULL DEFAULT false,
    ev_count      integer NOT NULL DEFAULT 0,
    ev_descriptor text
);

CREATE TABLE catalog_view_entries (
    parent     text NOT NULL,
    ord        integer NOT NULL,
    child      text NOT NULL,
    created_at bigint NOT NULL,
    mode       text NOT NULL,
    label      text,
    PRIMARY KEY (parent, ord)
);

INSERT INTO catalog_views (id) SELECT id FROM sessions;

CREATE FUNCTION dsh_catalog_views_session() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.id IS NOT DISTINCT FROM NEW.id THEN
        EXECUTE 'UPDATE catalog_views SET resolver = NULL WHERE id = $1' USING NEW.id;
        RETURN NULL;
    END IF;
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        EXECUTE 'DELETE FROM catalog_views WHERE id = $1' USING OLD.id;
        EXECUTE 'DELETE FROM catalog_view_entries WHERE parent = $1' USING OLD.id;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        EXECUTE 'INSERT INTO catalog_views (id) VALUES ($1)
                 ON CONFLICT (id) DO UPDATE SET resolver = NULL' USING NEW.id;
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER catalog_views_session AFTER INSERT OR UPDATE OR DELETE ON sessions
    FOR EACH ROW EXECUTE FUNCTION dsh_catalog_views_session();

CREATE FUNCTION dsh_catalog_views_stale_new() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE 'UPDATE catalog_views SET resolver = NULL WHERE id = ANY ($1)'
      USING ARRAY(SELECT DISTINCT session_id FROM new_rows);
    RETURN NULL;
END $$;

CREATE FUNCTION dsh_catalog_views_stale_old() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE 'UPDATE catalog_views SET resolver = NULL WHERE id = ANY ($1)'
      USING ARRAY(SELECT DISTINCT session_id FROM old_rows);
    RETURN NULL;
END $$;

CREATE FUNCTION dsh_catalog_views_stale_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE 'UPDATE catalog_views SET resolver = NULL WHERE id = ANY ($1)'
      USING ARRAY(SELECT session_id FROM old_rows UNION SELECT session_id FROM new_rows);
    RETURN NULL;
END $$;

CREATE FUNCTION dsh_catalog_views_stale_all() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_TABLE_NAME = 'sessions' THEN
        EXECUTE 'DELETE FROM catalog_views';
        EXECUTE 'DELETE FROM catalog_view_entries';
    ELSE
        EXECUTE 'UPDATE catalog_views SET resolver = NULL';
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER catalog_views_sessions_truncate AFTER TRUNCATE ON sessions
    FOR EACH STATEMENT EXECUTE FUNCTION dsh_catalog_views_stale_all();

CREATE TRIGGER catalog_views_events_insert AFTER INSERT ON events
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION dsh_catalog_views_stale_new();
CREATE TRIGGER catalog_views_events_update AFTER UPDATE ON events
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION dsh_catalog_views_stale_changed();
CREATE TRIGGER catalog_views_events_delete AFTER DELETE ON events
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION dsh_catalog_views_stale_old();
CREATE TRIGGER catalog_views_events_truncate AFTER TRUNCATE ON events
    FOR EACH STATEMENT EXECUTE FUNCTION dsh_catalog_views_stale_all();

CREATE TRIGGER catalog_views_torn_tails_insert AFTER INSERT ON torn_tails
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION dsh_catalog_views_stale_new();
CREATE TRIGGER catalog_views_torn_tails_update AFTER UPDATE ON torn_tails
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION dsh_catalog_views_stale_changed();
CREATE TRIGGER catalog_views_torn_tails_delete AFTER DELETE ON torn_tails
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION dsh_catalog_views_stale_old();
CREATE TRIGGER catalog_views_torn_tails_truncate AFTER TRUNCATE ON torn_tails
    FOR EACH STATEMENT EXECUTE FUNCTION dsh_catalog_views_stale_all();

CREATE TRIGGER catalog_views_damaged_logs_insert AFTER INSERT ON damaged_logs
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION dsh_catalog_views_stale_new();
CREATE TRIGGER catalog_views_damaged_logs_update AFTER UPDATE ON damaged_logs
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION dsh_catalog_views_stale_changed();
CREATE TRIGGER catalog_views_damaged_logs_delete AFTER DELETE ON damaged_logs
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION dsh_catalog_views_stale_old();
CREATE TRIGGER catalog_views_damaged_logs_truncate AFTER TRUNCATE ON damaged_logs
    FOR EACH STATEMENT EXECUTE FUNCTION dsh_catalog_views_stale_all();
