-- A log dsh stored knowing that it cannot be read: an import of a log that
-- fails DSH's validation or holds damage. read_failure is the error a full
-- read gives, recorded by the write that stored the log, so that a listing
-- shows such a child as unavailable without reading and validating its
-- whole log every time. NULL = nothing recorded (read the log to know).
--
-- Like verified, it describes the log as dsh wrote it: every trigger that
-- voids verified now voids it too, and so does any change to a torn tail or
-- a damaged log's stored rest (which decide what a read of the log gives).
-- dsh's own writes clear it when they record a log as verified.
ALTER TABLE sessions ADD COLUMN read_failure text;

CREATE OR REPLACE FUNCTION dsh_unverify_new_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE sessions SET verified = false, read_failure = NULL
     WHERE (verified OR read_failure IS NOT NULL) AND id IN (SELECT session_id FROM new_rows);
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION dsh_unverify_old_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE sessions SET verified = false, read_failure = NULL
     WHERE (verified OR read_failure IS NOT NULL) AND id IN (SELECT session_id FROM old_rows);
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION dsh_unverify_changed_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE sessions SET verified = false, read_failure = NULL
     WHERE (verified OR read_failure IS NOT NULL)
       AND (id IN (SELECT session_id FROM old_rows) OR id IN (SELECT session_id FROM new_rows));
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION dsh_unverify_session() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.verified := false;
    NEW.read_failure := NULL;
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
