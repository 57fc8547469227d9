-- Fill run_overlapping_origins for a database whose run logs were loaded before the table
-- existed: every file that reports a session id another file reports too. Run when an existing
-- database's schema is brought up to date (store/db.py, ensure_current_schema); a new file has
-- no row to read, so it skips this.
INSERT OR IGNORE INTO run_overlapping_origins (origin)
SELECT DISTINCT o.origin
FROM run_outcomes o
JOIN run_outcomes p ON p.session_id = o.session_id AND p.origin <> o.origin
