-- Every stored task's reference: the matcher links only to tasks that exist.
SELECT task_ref FROM tasks
