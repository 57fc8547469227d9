-- Commits a board record names itself (a referenced/merged/closed event's commit id, a PR's
-- merge commit) -> task_commits; $1 = matched_by, $2 = load_id. Returns the rows added.
INSERT INTO task_commits (task_ref, repo, sha, matched_by, load_id)
SELECT DISTINCT ON (c.task_ref, c.repo, c.sha) c.task_ref, c.repo, c.sha, $1, $2
FROM board_incoming_commits AS c
ORDER BY c.task_ref, c.repo, c.sha
ON CONFLICT DO NOTHING;
