-- The change signal (backend.ChangeNotifier; ../0011_change_notify.sql is
-- its SQLite twin): every statement that writes a table a listing, an audit
-- or a lease listing reads sends NOTIFY dsh_changes, with the schema the
-- table is in as the payload, so that a watcher of one catalog ignores
-- another's in the same database. PostgreSQL delivers a notification when
-- the transaction commits, never for one rolled back, and folds the
-- identical notifications of one transaction into one, so a transaction
-- costs a watcher one wake-up however many statements it ran. A watcher
-- only LISTENs, which a role that may only SELECT may do.
CREATE FUNCTION dsh_notify_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('dsh_changes', TG_TABLE_SCHEMA);
    RETURN NULL;
END $$;

CREATE TRIGGER sessions_notify_change AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON sessions
    FOR EACH STATEMENT EXECUTE FUNCTION dsh_notify_change();
CREATE TRIGGER events_notify_change AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON events
    FOR EACH STATEMENT EXECUTE FUNCTION dsh_notify_change();
CREATE TRIGGER torn_tails_notify_change AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON torn_tails
    FOR EACH STATEMENT EXECUTE FUNCTION dsh_notify_change();
CREATE TRIGGER damaged_logs_notify_change AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON damaged_logs
    FOR EACH STATEMENT EXECUTE FUNCTION dsh_notify_change();
CREATE TRIGGER projection_checkpoints_notify_change AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON projection_checkpoints
    FOR EACH STATEMENT EXECUTE FUNCTION dsh_notify_change();
CREATE TRIGGER leases_notify_change AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON leases
    FOR EACH STATEMENT EXECUTE FUNCTION dsh_notify_change();
CREATE TRIGGER import_refusals_notify_change AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON import_refusals
    FOR EACH STATEMENT EXECUTE FUNCTION dsh_notify_change();
