-- How much write-ahead log DuckDB gathers before a checkpoint during (and after) a bulk sidecar
-- load: each checkpoint rewrites the primary-key index, so the default 16 MB made loads quadratic.
SET checkpoint_threshold = $value
