-- Several cycle events in one statement: parallel lists of ids, types and JSON payloads.
INSERT INTO events (event_id, cycle_run_id, type, "at", data)
SELECT unnest($event_ids::BIGINT[]), $cycle_run_id, unnest($types::VARCHAR[]), $at,
       unnest($data::VARCHAR[])::JSON
