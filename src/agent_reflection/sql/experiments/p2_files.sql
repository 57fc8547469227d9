-- Files of the given commits: (repo, sha) pairs in $repos / $shas (same length, zipped).
-- A merge's files are its own plus its second parent's (a merged PR's head), as in
-- p2_signals.sql, so a merged PR's risk floor sees the files it brought in.
WITH wanted AS (
    SELECT unnest($repos) AS repo, unnest($shas) AS sha
)
SELECT DISTINCT repo, sha, path FROM (
    SELECT w.repo, w.sha, cf.path
    FROM wanted w JOIN commit_files cf ON cf.repo = w.repo AND cf.sha = w.sha
    UNION ALL
    SELECT w.repo, w.sha, cf.path
    FROM wanted w
    JOIN commits c ON c.repo = w.repo AND c.sha = w.sha AND c.is_merge AND len(c.parents) >= 2
    JOIN commit_files cf ON cf.repo = c.repo AND cf.sha = c.parents[2]
)
ORDER BY repo, sha, path
