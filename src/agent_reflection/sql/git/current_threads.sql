-- DuckDB's thread count, restored after a git load (which runs its appends on one thread).
SELECT current_setting('threads')
