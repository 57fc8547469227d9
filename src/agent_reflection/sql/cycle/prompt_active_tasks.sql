-- Tier 2 prompt: the active tasks (prompts cut to 160 characters), at most $limit.
SELECT task_id, coalesce(run_count, 0), left(coalesce(ai_prompt, ''), 160)
FROM run_tasks WHERE status = 'active' ORDER BY task_id LIMIT $limit
