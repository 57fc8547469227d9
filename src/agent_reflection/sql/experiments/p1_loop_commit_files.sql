-- The files of the given commits ($repos[i], $shas[i]): what a session's revert or fix touched.
SELECT f.repo, f.sha, list(f.path ORDER BY f.path) AS paths
FROM commit_files f
JOIN (SELECT unnest($repos) AS repo, unnest($shas) AS sha) AS wanted
  ON wanted.repo = f.repo AND wanted.sha = f.sha
GROUP BY f.repo, f.sha
