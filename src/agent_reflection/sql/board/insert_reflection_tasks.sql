-- match_incoming(a = content_hash, b = task_ref, rule); $1 = load_id.
INSERT INTO reflection_tasks (content_hash, task_ref, matched_by, load_id)
SELECT DISTINCT ON (a, b) a, b, rule, $1
FROM match_incoming
ORDER BY a, b, rule
ON CONFLICT DO NOTHING;
