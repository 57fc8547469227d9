-- P2: the files of every commit. A merge's files are its own plus its second parent's (a merged
-- PR's head), so a merged PR's risk floor and file overlap see the files it brought in.
SELECT DISTINCT repo, sha, path, added, deleted FROM (
    SELECT cf.repo, cf.sha, cf.path, cf.added, cf.deleted FROM commit_files cf
    UNION ALL
    SELECT c.repo, c.sha, cf.path, cf.added, cf.deleted
    FROM commits c
    JOIN commit_files cf ON cf.repo = c.repo AND cf.sha = c.parents[2]
    WHERE c.is_merge AND len(c.parents) >= 2
)
ORDER BY repo, sha, path
