-- The fixes SZZ attributes for one repo: fix-like commits that are not merges, oldest first,
-- with their parents and committer time (epoch seconds, for the gap to each candidate).
SELECT sha, parents, epoch(committer_time) AS committer_epoch
FROM commits
WHERE repo = ? AND is_fix_like AND NOT is_merge
ORDER BY committer_time, sha
