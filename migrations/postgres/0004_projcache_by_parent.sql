-- dsh's own projection checkpoint cache (package internal/projcache), the
-- table projection_checkpoints. Not DSH's session_projcache.json file, which
-- dsh only reads (dshformat.ReadCache) and never stores here.
-- A listing reads the checkpoints of one parent's children with one index
-- range over the witness's parent, as ../0004_projcache_by_parent.sql.
CREATE INDEX projection_checkpoints_by_parent
    ON projection_checkpoints (parent_session)
    WHERE parent_session IS NOT NULL;
