-- One simulated task event.
INSERT INTO task_events (task_ref, "at", kind, detail, load_id)
VALUES ($task_ref, $at, $kind, $detail, $load_id)
