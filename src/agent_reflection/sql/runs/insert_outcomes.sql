-- New outcomes from the registered arrow table _new_outcomes; rows already present (same
-- origin and session_id, or the same session_id and raw record from any file) are skipped.
-- $1 source_format, $2 origin, $3 load_id.
INSERT INTO run_outcomes (session_id, task_id, objective, status, started_at, finished_at,
                          result_length, cost, source_format, origin, matched_by, raw, load_id)
SELECT n.session_id, n.task_id, n.objective, n.status, n.started_at, n.finished_at,
       n.result_length, n.cost, $1, $2,
       CASE WHEN n.task_id IS NOT NULL THEN 'task_id' END,
       n.raw, $3
FROM _new_outcomes n
ANTI JOIN run_outcomes o ON o.origin = $2 AND o.session_id = n.session_id
ANTI JOIN run_outcomes c ON c.session_id = n.session_id AND c.raw = n.raw;
