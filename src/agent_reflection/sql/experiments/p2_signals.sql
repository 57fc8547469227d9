-- P2 failure signals: reverts, and fix-like commits within $window_days after a feature change
-- (a commit whose cc_type is in $feature_types, or a merged PR when $feature_merged_pr) that
-- touch at least one of its files. A merge's files are its own plus its second parent's.
-- One row per signal; a fix pairs with the latest qualifying feature change before it.
WITH c AS (
    SELECT *, CASE WHEN $time_column = 'author_time' THEN author_time ELSE committer_time END AS t
    FROM commits
),
features AS (
    SELECT repo, sha, t, parents, is_merge FROM c
    WHERE list_contains($feature_types, cc_type)
       OR ($feature_merged_pr AND is_merge AND pr_number IS NOT NULL)
),
feature_files AS (
    SELECT f.repo, f.sha, cf.path FROM features f
    JOIN commit_files cf ON cf.repo = f.repo AND cf.sha = f.sha
    UNION
    SELECT f.repo, f.sha, cf.path FROM features f
    JOIN commit_files cf ON cf.repo = f.repo AND f.is_merge AND len(f.parents) >= 2
        AND cf.sha = f.parents[2]
),
fix_pairs AS (
    SELECT x.repo, x.sha AS fixing_sha, x.t AS "at", feat.sha AS failing_sha, feat.t AS failing_at
    FROM c x
    JOIN features feat ON feat.repo = x.repo AND feat.t < x.t
        AND x.t <= feat.t + to_days(CAST($window_days AS INTEGER))
    WHERE x.is_fix_like AND NOT x.is_revert
      AND EXISTS (
        SELECT 1 FROM commit_files a JOIN feature_files b ON a.path = b.path
        WHERE a.repo = x.repo AND a.sha = x.sha AND b.repo = feat.repo AND b.sha = feat.sha
      )
),
fixes AS (
    SELECT repo, fixing_sha, max("at") AS "at",
           arg_max(failing_sha, failing_at) AS failing_sha
    FROM fix_pairs GROUP BY repo, fixing_sha
),
reverts AS (
    SELECT r.repo, r.sha AS fixing_sha, r.t AS "at", r.reverts_sha,
           (SELECT min(x.sha) FROM commits x WHERE x.repo = r.repo
               AND r.reverts_sha IS NOT NULL AND length(r.reverts_sha) >= 7
               AND starts_with(x.sha, lower(r.reverts_sha))) AS failing_sha
    FROM c r WHERE r.is_revert AND NOT r.is_reapply
)
SELECT s.repo, s.kind, s.fixing_sha, s."at", s.failing_sha, s.reverts_sha,
       c.subject, c.body
FROM (
    SELECT repo, 'revert' AS kind, fixing_sha, "at", failing_sha, reverts_sha FROM reverts
    UNION ALL
    SELECT repo, 'fix-after-feature', fixing_sha, "at", failing_sha, NULL FROM fixes
) s
JOIN commits c ON c.repo = s.repo AND c.sha = s.fixing_sha
ORDER BY s.repo, s."at", s.fixing_sha
