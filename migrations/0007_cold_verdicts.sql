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
ALTER TABLE sessions ADD COLUMN read_failure TEXT;
ALTER TABLE sessions ADD COLUMN registry_fold TEXT;

DROP TRIGGER events_insert_unverifies;
CREATE TRIGGER events_insert_unverifies AFTER INSERT ON events
BEGIN
    UPDATE sessions SET verified = 0, read_failure = NULL, registry_fold = NULL
     WHERE id = NEW.session_id AND (verified <> 0 OR read_failure IS NOT NULL OR registry_fold IS NOT NULL);
END;

DROP TRIGGER events_update_unverifies;
CREATE TRIGGER events_update_unverifies AFTER UPDATE ON events
BEGIN
    UPDATE sessions SET verified = 0, read_failure = NULL, registry_fold = NULL
     WHERE id IN (OLD.session_id, NEW.session_id) AND (verified <> 0 OR read_failure IS NOT NULL OR registry_fold IS NOT NULL);
END;

DROP TRIGGER events_delete_unverifies;
CREATE TRIGGER events_delete_unverifies AFTER DELETE ON events
BEGIN
    UPDATE sessions SET verified = 0, read_failure = NULL, registry_fold = NULL
     WHERE id = OLD.session_id AND (verified <> 0 OR read_failure IS NOT NULL OR registry_fold IS NOT NULL);
END;

DROP TRIGGER torn_tails_insert_unverifies;
CREATE TRIGGER torn_tails_insert_unverifies AFTER INSERT ON torn_tails
BEGIN
    UPDATE sessions SET verified = 0, read_failure = NULL, registry_fold = NULL
     WHERE id = NEW.session_id AND (verified <> 0 OR read_failure IS NOT NULL OR registry_fold IS NOT NULL);
END;

CREATE TRIGGER torn_tails_update_unverifies AFTER UPDATE ON torn_tails
BEGIN
    UPDATE sessions SET verified = 0, read_failure = NULL, registry_fold = NULL
     WHERE id IN (OLD.session_id, NEW.session_id) AND (verified <> 0 OR read_failure IS NOT NULL OR registry_fold IS NOT NULL);
END;

CREATE TRIGGER torn_tails_delete_unverifies AFTER DELETE ON torn_tails
BEGIN
    UPDATE sessions SET verified = 0, read_failure = NULL, registry_fold = NULL
     WHERE id = OLD.session_id AND (verified <> 0 OR read_failure IS NOT NULL OR registry_fold IS NOT NULL);
END;

DROP TRIGGER damaged_logs_insert_unverifies;
CREATE TRIGGER damaged_logs_insert_unverifies AFTER INSERT ON damaged_logs
BEGIN
    UPDATE sessions SET verified = 0, read_failure = NULL, registry_fold = NULL
     WHERE id = NEW.session_id AND (verified <> 0 OR read_failure IS NOT NULL OR registry_fold IS NOT NULL);
END;

CREATE TRIGGER damaged_logs_update_unverifies AFTER UPDATE ON damaged_logs
BEGIN
    UPDATE sessions SET verified = 0, read_failure = NULL, registry_fold = NULL
     WHERE id IN (OLD.session_id, NEW.session_id) AND (verified <> 0 OR read_failure IS NOT NULL OR registry_fold IS NOT NULL);
END;

CREATE TRIGGER damaged_logs_delete_unverifies AFTER DELETE ON damaged_logs
BEGIN
    UPDATE sessions SET verified = 0, read_failure = NULL, registry_fold = NULL
     WHERE id = OLD.session_id AND (verified <> 0 OR read_failure IS NOT NULL OR registry_fold IS NOT NULL);
END;

DROP TRIGGER sessions_header_update_unverifies;
CREATE TRIGGER sessions_header_update_unverifies
AFTER UPDATE OF version, id, created_at, cwd, parent_session, seed_length, origin,
                delegation_depth, agent_preset ON sessions
BEGIN
    UPDATE sessions SET verified = 0, read_failure = NULL, registry_fold = NULL
     WHERE id = NEW.id AND (verified <> 0 OR read_failure IS NOT NULL OR registry_fold IS NOT NULL);
END;
