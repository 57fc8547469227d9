-- Let go of the live database attached by attach_live.sql (the watcher's telemetry source).
DETACH otlp_live
