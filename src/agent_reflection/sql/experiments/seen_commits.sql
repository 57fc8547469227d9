-- Commits among the pre-registration's [seen] git_commits markers, per repository:
-- (what, name, markers present, one of them). Read by experiments/registration.py.
SELECT 'repository' AS what, repo AS name, count(DISTINCT sha) AS present, min(sha) AS example
FROM commits
WHERE list_contains($markers::VARCHAR[], sha)
GROUP BY repo
ORDER BY repo
