-- The commits of one repo already in the database (an incremental load skips them).
SELECT sha FROM commits WHERE repo = ?
