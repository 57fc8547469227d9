-- Set DuckDB's thread count: one while a load appends (small appends run faster so, and leave the
-- other cores to the parser processes), then back to what it was.
SET threads = $threads
