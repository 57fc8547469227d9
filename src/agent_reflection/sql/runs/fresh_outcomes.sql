-- Which outcomes of the registered Arrow table _new_outcomes are not stored yet for $origin
-- (read before runs/insert_outcomes.sql adds them).
SELECT n.session_id, n.task_id, n.status FROM _new_outcomes n
ANTI JOIN run_outcomes o ON o.origin = $origin AND o.session_id = n.session_id
