-- The commits SZZ reads for one repo, oldest first, with their parents and committer time
-- (epoch seconds, for the gap to each candidate): fix-like commits that are not merges (diffed
-- and blamed), and non-merge reverts that are not fix-like (`diff_only`: only their diff facts
-- go to fix_changes, so P2 can tell a revert of a docstring from a revert of code).
SELECT sha, parents, epoch(committer_time) AS committer_epoch, NOT is_fix_like AS diff_only
FROM commits
WHERE repo = ? AND (is_fix_like OR is_revert) AND NOT is_merge
ORDER BY committer_time, sha
