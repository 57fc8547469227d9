-- Recorded tips of one repo that are still loaded (deleting a repo's commits retires its tips).
SELECT t.sha
FROM git_tips AS t
JOIN commits AS c ON c.repo = t.repo AND c.sha = t.sha
WHERE t.repo = $repo
ORDER BY t.sha
