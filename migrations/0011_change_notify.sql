-- The change signal (backend.ChangeNotifier) needs nothing in a SQLite
-- file: a watcher polls PRAGMA data_version, which SQLite changes for a
-- connection whenever another one has committed. This migration keeps the
-- numbering aligned with postgres/0011_change_notify.sql, which creates the
-- triggers PostgreSQL's LISTEN/NOTIFY signal needs.
SELECT 1;
