-- P2: every CI result by full commit sha (joined to commits by sha alone: a clone's repo name
-- is not GitHub's owner/repo).
SELECT lower(sha) AS sha, kind, name, conclusion
FROM ci_runs
ORDER BY sha, kind, name, run_id, attempt
