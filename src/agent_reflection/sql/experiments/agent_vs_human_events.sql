-- Agent vs human: what follows a commit of one repo. "revert": a pure revert (not a reapply)
-- whose "This reverts commit <sha>" line names it (7-40 hex, a prefix of its id); "fix": a
-- fix-like commit whose deleted or changed code lines SZZ blames on it (fix_inducing, method
-- blame). One row per (kind, target, following commit), dated by $time_column, with the
-- following commit's message (a cosmetic fix is told apart by its words).
WITH c AS (
    SELECT sha, reverts_sha, is_revert, is_reapply, subject || chr(10) || body AS message,
           CASE WHEN $time_column = 'author_time' THEN author_time ELSE committer_time END AS "at"
    FROM commits
    WHERE repo = $repo
)
SELECT 'revert' AS kind, target.sha AS target, r.sha, r."at", r.message
FROM c AS r
JOIN c AS target ON starts_with(target.sha, lower(r.reverts_sha))
WHERE r.is_revert AND NOT r.is_reapply AND r.reverts_sha IS NOT NULL AND target.sha <> r.sha
UNION ALL
SELECT DISTINCT 'fix' AS kind, fi.introducing_sha AS target, fix.sha, fix."at", fix.message
FROM fix_inducing AS fi
JOIN c AS fix ON fix.sha = fi.fix_sha
WHERE fi.repo = $repo AND fi.method = 'blame' AND fi.introducing_sha IS NOT NULL
ORDER BY kind, target, "at"
