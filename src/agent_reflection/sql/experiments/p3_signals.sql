-- Every machine-readable right/wrong signal about any task, dated when possible.
-- Parameters: $reopen_kinds, $reopen_status_pattern, $link_kinds + $link_directions (the
-- pre-registered rules, pairwise), $verified_pattern, $verified_kinds, $commit_signals,
-- $cross_reference_kinds + $cross_reference_pattern (a later record mentioning the task),
-- $accidental_minutes, $completion_kinds, $problem_pattern.
-- A signal's "at" may be NULL (e.g. a link to a task not in the data): listed, never counted.
-- A reopen within $accidental_minutes after a completion event undoes an accidental close: no
-- signal. A cross-reference counts only with its polarity known: the mentioning record is a
-- task in the data whose title or labels match $problem_pattern (a problem report); filed_at
-- is its creation, which must not precede the mentioned task's completion (checked in
-- experiments/p3/analysis.py, which knows the completion).
WITH linked AS (  -- commits linked to a task
    SELECT tc.task_ref, c.repo, c.sha, c.committer_time
    FROM task_commits tc
    JOIN commits c ON c.repo = tc.repo AND c.sha = tc.sha
    WHERE $commit_signals
),
link_rules AS (
    SELECT unnest($link_kinds::VARCHAR[]) AS kind_pattern,
           unnest($link_directions::VARCHAR[]) AS direction
)
SELECT e.task_ref, 'reopened' AS kind, 'negative' AS polarity, e."at" AS "at",
       e.kind || coalesce(': ' || nullif(e.detail, ''), '') AS detail,
       NULL::TIMESTAMPTZ AS filed_at
FROM task_events e
WHERE (list_contains($reopen_kinds, e.kind)
       OR (e.kind = 'status_changed' AND regexp_matches(e.detail, $reopen_status_pattern, 'i')))
  AND NOT EXISTS (
      SELECT 1 FROM task_events c
      WHERE c.task_ref = e.task_ref AND list_contains($completion_kinds, c.kind)
        AND c."at" <= e."at"
        AND e."at" <= c."at" + to_minutes(CAST($accidental_minutes AS BIGINT))
  )
UNION ALL
SELECT l.task_ref, 'regression-link', 'negative', t.created_at,
       l.kind || ' (' || l.direction || ') ' || l.target_ref, NULL
FROM task_links l
LEFT JOIN tasks t ON t.task_ref = l.target_ref
WHERE EXISTS (SELECT 1 FROM link_rules r
              WHERE r.direction = l.direction AND regexp_matches(l.kind, r.kind_pattern, 'i'))
UNION ALL
SELECT e.task_ref, 'verified', 'positive', e."at", e.kind || ': ' || coalesce(e.detail, ''), NULL
FROM task_events e
WHERE list_contains($verified_kinds, e.kind)
  AND regexp_matches(coalesce(e.detail, ''), $verified_pattern, 'i')
UNION ALL
SELECT t.task_ref, 'verified', 'positive', t.updated_on,
       'current state: ' || coalesce(t.status, '') || ' ' || array_to_string(coalesce(t.labels, []), ','), NULL
FROM tasks t
WHERE regexp_matches(coalesce(t.status, '') || ' ' || array_to_string(coalesce(t.labels, []), ' '),
                     $verified_pattern, 'i')
UNION ALL
SELECT e.task_ref, 'cross-reference', 'negative', e."at",
       e.kind || ': ' || e.detail || ' (' || coalesce(m.title, '') || ')', m.created_at
FROM task_events e
JOIN tasks m ON m.task_ref = regexp_extract(e.detail, '^\S+ (\S+)$', 1)
WHERE list_contains($cross_reference_kinds, e.kind)
  AND regexp_matches(e.detail, $cross_reference_pattern)
  AND regexp_matches(coalesce(m.title, '') || ' ' || array_to_string(coalesce(m.labels, []), ' '),
                     $problem_pattern, 'i')
UNION ALL
SELECT k.task_ref, 'revert', 'negative', r.committer_time,
       r.repo || '@' || r.sha || ' reverts ' || k.sha, NULL
FROM linked k
JOIN commits r ON r.repo = k.repo AND r.is_revert AND NOT r.is_reapply
    AND r.reverts_sha IS NOT NULL AND length(r.reverts_sha) >= 7
    AND starts_with(k.sha, lower(r.reverts_sha))
UNION ALL
SELECT DISTINCT k.task_ref, 'fix', 'negative', f.committer_time,
       f.repo || '@' || f.sha || ' fixes a file of ' || k.sha, NULL
FROM linked k
JOIN commits f ON f.repo = k.repo AND f.is_fix_like AND NOT f.is_revert
    AND f.committer_time > k.committer_time
JOIN commit_files kf ON kf.repo = k.repo AND kf.sha = k.sha
JOIN commit_files ff ON ff.repo = f.repo AND ff.sha = f.sha AND ff.path = kf.path
WHERE NOT EXISTS (
    SELECT 1 FROM task_commits own
    WHERE own.task_ref = k.task_ref AND own.repo = f.repo AND own.sha = f.sha
)
