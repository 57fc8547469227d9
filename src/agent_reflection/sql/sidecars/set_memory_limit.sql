-- DuckDB's memory limit for (and after) a bulk sidecar load, e.g. '512MB'.
SET memory_limit = $value
