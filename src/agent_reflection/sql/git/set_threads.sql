-- Set DuckDB's thread count: one while a git load appends (small appends run faster so, and
-- leave the other cores to git), then back to what it was.
SET threads = $threads
