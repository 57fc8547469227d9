-- The DuckDB settings a bulk sidecar load changes, read first so they can be restored after it.
SELECT
    current_setting('threads') AS threads,
    current_setting('memory_limit') AS memory_limit,
    current_setting('checkpoint_threshold') AS checkpoint_threshold
