-- One pause, resume or re-enable of a task: here, and in $sqlite_source too when not NULL.
INSERT INTO task_actions (task_id, action, previous_status, sqlite_source, cycle_run_id, "at")
VALUES ($task_id, $action, $previous_status, $sqlite_source, $cycle_run_id, $at)
