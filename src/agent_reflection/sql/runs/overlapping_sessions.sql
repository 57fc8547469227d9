-- Sessions load $load_id added for file $origin that other files report too (same session_id,
-- different content: e.g. a run log and the session's trajectory), one row per (other file,
-- session); same_task: both name the same task, so the rules count the session once.
SELECT o.origin, n.session_id, o.task_id IS NOT DISTINCT FROM n.task_id AS same_task
FROM run_outcomes n
JOIN run_outcomes o ON o.session_id = n.session_id AND o.origin <> n.origin
WHERE n.origin = $origin AND n.load_id = $load_id
ORDER BY o.origin, n.session_id
