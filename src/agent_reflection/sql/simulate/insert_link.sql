-- One simulated link between tasks.
INSERT INTO task_links (task_ref, target_ref, kind, direction, load_id)
VALUES ($task_ref, $target_ref, $kind, $direction, $load_id)
