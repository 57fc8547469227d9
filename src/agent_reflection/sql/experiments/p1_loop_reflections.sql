-- Sidecars with a confidence, each with the board task it names: the task matcher's mapping
-- (reflection_tasks) when there is one, else reflections.task_ref as written.
SELECT coalesce(
           (SELECT min(rt.task_ref) FROM reflection_tasks rt
            WHERE rt.content_hash = r.content_hash),
           r.task_ref
       ) AS task_ref,
       r.agent, r.repo, r.confidence
FROM reflections r
WHERE r.confidence IS NOT NULL
ORDER BY r.content_hash
