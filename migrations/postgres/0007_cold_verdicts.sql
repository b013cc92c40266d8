-- What a cold read of a log gives, recorded when dsh stores the log, so
-- that a listing never reads a log again to learn it:
--
-- read_failure: the log cannot be read (an import of a log failing DSH's
-- validation or holding damage); the error a full read gives, recorded by
-- that import.
--
-- registry_fold: the outcome of dsh's projection registry folded over the
-- whole stored log (every unit's version, and the subagent view or the
-- failure of a unit), recorded by a writer that holds that fold in the
-- transaction that stores the log (dsh's turn writer, the corpus
-- generator). It is derived data: `dsh cache clear` clears it.
--
-- NULL = nothing recorded (read the log to know). Like verified, both
-- describe the log as dsh wrote it: every trigger that voids verified now
-- voids them too, and so does any change to a torn tail or a damaged log's
-- stored rest (which decide what a read of the log gives). dsh's own writes
-- clear them when they record a log as verified.
ALTER TABLE sessions ADD COLUMN read_failure text;
ALTER TABLE sessions ADD COLUMN registry_fold text;

-- The triggers run their UPDATE through EXECUTE, planned afresh each time:
-- PL/pgSQL keeps a static statement's plan for the connection's life, and
-- one planned while sessions was nearly empty (the start of an import into
-- a new store) scans all of sessions for every statement ever after, which
-- made an import quadratic in the sessions it had already written.

CREATE OR REPLACE FUNCTION dsh_unverify_new_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE 'UPDATE sessions SET verified = false, read_failure = NULL, registry_fold = NULL
              WHERE id = ANY ($1) AND (verified OR read_failure IS NOT NULL OR registry_fold IS NOT NULL)'
      USING ARRAY(SELECT DISTINCT session_id FROM new_rows);
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION dsh_unverify_old_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE 'UPDATE sessions SET verified = false, read_failure = NULL, registry_fold = NULL
              WHERE id = ANY ($1) AND (verified OR read_failure IS NOT NULL OR registry_fold IS NOT NULL)'
      USING ARRAY(SELECT DISTINCT session_id FROM old_rows);
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION dsh_unverify_changed_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE 'UPDATE sessions SET verified = false, read_failure = NULL, registry_fold = NULL
              WHERE id = ANY ($1) AND (verified OR read_failure IS NOT NULL OR registry_fold IS NOT NULL)'
      USING ARRAY(SELECT session_id FROM old_rows UNION SELECT session_id FROM new_rows);
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION dsh_unverify_session() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.verified := false;
    NEW.read_failure := NULL;
    NEW.registry_fold := NULL;
    RETURN NEW;
END $$;

CREATE TRIGGER torn_tails_update_unverifies AFTER UPDATE ON torn_tails
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION dsh_unverify_changed_rows();

CREATE TRIGGER torn_tails_delete_unverifies AFTER DELETE ON torn_tails
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION dsh_unverify_old_rows();

CREATE TRIGGER damaged_logs_update_unverifies AFTER UPDATE ON damaged_logs
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION dsh_unverify_changed_rows();

CREATE TRIGGER damaged_logs_delete_unverifies AFTER DELETE ON damaged_logs
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION dsh_unverify_old_rows();
