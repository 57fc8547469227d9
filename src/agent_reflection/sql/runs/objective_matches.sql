-- Outcomes of file $origin whose task was matched by objective (runs/match_by_objective.sql):
-- the new outcomes reported to the watch triggers get their task from here.
SELECT session_id, task_id FROM run_outcomes
WHERE matched_by = 'objective' AND origin = $origin
