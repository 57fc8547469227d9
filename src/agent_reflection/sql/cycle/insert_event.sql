-- One cycle event (finding, analysis completed, skill flagged, mutation requested); $data JSON.
INSERT INTO events (event_id, cycle_run_id, type, "at", data)
VALUES ($event_id, $cycle_run_id, $type, $at, $data)
