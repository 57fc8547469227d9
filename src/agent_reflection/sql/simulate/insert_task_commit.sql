-- One simulated task-to-commit link, as the task matcher's task-ref rule would make it.
INSERT INTO task_commits (task_ref, repo, sha, matched_by, load_id)
VALUES ($task_ref, $repo, $sha, 'task-ref', $load_id)
