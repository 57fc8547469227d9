-- The database `reflect serve` fills, read-only, for the watcher's telemetry source. ATTACH
-- takes no bound parameter: {path} is the file as a quoted SQL string literal.
ATTACH {path} AS otlp_live (READ_ONLY)
