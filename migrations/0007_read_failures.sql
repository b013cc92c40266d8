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
ALTER TABLE sessions ADD COLUMN read_failure TEXT;

DROP TRIGGER events_insert_unverifies;
CREATE TRIGGER events_insert_unverifies AFTER INSERT ON events
BEGIN
    UPDATE sessions SET verified = 0, read_failure = NULL
     WHERE id = NEW.session_id AND (verified <> 0 OR read_failure IS NOT NULL);
END;

DROP TRIGGER events_update_unverifies;
CREATE TRIGGER events_update_unverifies AFTER UPDATE ON events
BEGIN
    UPDATE sessions SET verified = 0, read_failure = NULL
     WHERE id IN (OLD.session_id, NEW.session_id) AND (verified <> 0 OR read_failure IS NOT NULL);
END;

DROP TRIGGER events_delete_unverifies;
CREATE TRIGGER events_delete_unverifies AFTER DELETE ON events
BEGIN
    UPDATE sessions SET verified = 0, read_failure = NULL
     WHERE id = OLD.session_id AND (verified <> 0 OR read_failure IS NOT NULL);
END;

DROP TRIGGER torn_tails_insert_unverifies;
CREATE TRIGGER torn_tails_insert_unverifies AFTER INSERT ON torn_tails
BEGIN
    UPDATE sessions SET verified = 0, read_failure = NULL
     WHERE id = NEW.session_id AND (verified <> 0 OR read_failure IS NOT NULL);
END;

CREATE TRIGGER torn_tails_update_unverifies AFTER UPDATE ON torn_tails
BEGIN
    UPDATE sessions SET verified = 0, read_failure = NULL
     WHERE id IN (OLD.session_id, NEW.session_id) AND (verified <> 0 OR read_failure IS NOT NULL);
END;

CREATE TRIGGER torn_tails_delete_unverifies AFTER DELETE ON torn_tails
BEGIN
    UPDATE sessions SET verified = 0, read_failure = NULL
     WHERE id = OLD.session_id AND (verified <> 0 OR read_failure IS NOT NULL);
END;

DROP TRIGGER damaged_logs_insert_unverifies;
CREATE TRIGGER damaged_logs_insert_unverifies AFTER INSERT ON damaged_logs
BEGIN
    UPDATE sessions SET verified = 0, read_failure = NULL
     WHERE id = NEW.session_id AND (verified <> 0 OR read_failure IS NOT NULL);
END;

CREATE TRIGGER damaged_logs_update_unverifies AFTER UPDATE ON damaged_logs
BEGIN
    UPDATE sessions SET verified = 0, read_failure = NULL
     WHERE id IN (OLD.session_id, NEW.session_id) AND (verified <> 0 OR read_failure IS NOT NULL);
END;

CREATE TRIGGER damaged_logs_delete_unverifies AFTER DELETE ON damaged_logs
BEGIN
    UPDATE sessions SET verified = 0, read_failure = NULL
     WHERE id = OLD.session_id AND (verified <> 0 OR read_failure IS NOT NULL);
END;

DROP TRIGGER sessions_header_update_unverifies;
CREATE TRIGGER sessions_header_update_unverifies
AFTER UPDATE OF version, id, created_at, cwd, parent_session, seed_length, origin,
                delegation_depth, agent_preset ON sessions
BEGIN
    UPDATE sessions SET verified = 0, read_failure = NULL
     WHERE id = NEW.id AND (verified <> 0 OR read_failure IS NOT NULL);
END;
