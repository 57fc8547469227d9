-- match_incoming(a = task_ref, b = repo, c = sha, rule); duplicates keep one row; $1 = load_id.
INSERT INTO task_commits (task_ref, repo, sha, matched_by, load_id)
SELECT DISTINCT ON (a, b, c) a, b, c, rule, $1
FROM match_incoming
ORDER BY a, b, c, rule
ON CONFLICT DO NOTHING;
