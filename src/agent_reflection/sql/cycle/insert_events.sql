-- Several cycle events in one statement: parallel lists of ids, types and JSON payloads, each
-- list as one JSON text (see insert_findings.sql: a Python list costs 15 us an item to bind).
INSERT INTO events (event_id, cycle_run_id, type, "at", data)
SELECT unnest(from_json($event_ids, '["BIGINT"]')), $cycle_run_id,
       unnest(from_json($types, '["VARCHAR"]')), $at,
       unnest(from_json($data, '["VARCHAR"]'))::JSON
