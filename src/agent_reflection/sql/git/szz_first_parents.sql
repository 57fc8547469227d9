-- SZZ's blame horizon: the commits of one repo committed at or after $since (epoch seconds) and
-- their first parents, each with its first parent, committer time (what `git blame --since`
-- compares), whether it is a merge, and the paths its diff against the first parent touches
-- (commit_files: new and old names; a merge has none listed).
WITH recent AS (
    SELECT sha, parents[1] AS first_parent FROM commits
    WHERE repo = $repo AND committer_time >= to_timestamp($since)
),
wanted AS (
    SELECT sha FROM recent UNION SELECT first_parent FROM recent WHERE first_parent IS NOT NULL
)
SELECT c.sha, c.parents[1] AS first_parent, CAST(epoch(c.committer_time) AS BIGINT) AS at,
       c.is_merge,
       list(f.path) FILTER (WHERE f.path IS NOT NULL) AS paths,
       list(f.old_path) FILTER (WHERE f.old_path IS NOT NULL) AS old_paths
FROM commits c
JOIN wanted w ON w.sha = c.sha
LEFT JOIN commit_files f ON f.repo = c.repo AND f.sha = c.sha
WHERE c.repo = $repo
GROUP BY ALL
