-- Every stored sidecar's content hash and the task it names (NULL when none).
SELECT content_hash, task_ref FROM reflections
