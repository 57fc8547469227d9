-- Tasks that outcomes name but no task record described: active, counted from the outcomes.
-- $1 origin, $2 load_id.
INSERT INTO run_tasks (task_id, status, source_status, run_count, ai_prompt,
                       last_result_summary, implicit, origin, load_id)
SELECT o.task_id, 'active', 'active', count(*), NULL, NULL, TRUE, $1, $2
FROM run_outcomes o
ANTI JOIN run_tasks t ON t.task_id = o.task_id
WHERE o.task_id IS NOT NULL
GROUP BY o.task_id;

UPDATE run_tasks t SET run_count = c.n
FROM (SELECT task_id, count(*) AS n FROM run_outcomes GROUP BY task_id) c
WHERE t.implicit AND c.task_id = t.task_id AND t.run_count IS DISTINCT FROM c.n;
