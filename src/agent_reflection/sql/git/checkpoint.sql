-- Write everything to the database file now, while the connection still holds its lock: the
-- file's identity taken right after is the one a no-change re-load compares (load/git/unchanged).
CHECKPOINT
