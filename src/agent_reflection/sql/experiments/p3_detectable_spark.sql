-- P3's detectable fraction per source, in Spark SQL over the Parquet export (the scale-out
-- proof, experiments/p3/spark.py): the definitions of p3_tasks.sql (first completion),
-- p3_sources.sql (each source's own as_of), p3_signals.sql (every signal kind, cross-references
-- with their polarity rule) and
-- experiments/p3/analysis.py outcomes_from (follow-up, window), for Spark 3.5+ with named parameters.
-- Lists arrive as text: kinds comma-separated, link rules tab-separated pairwise.
-- Views: tasks, task_events, task_links, commits, commit_files, task_commits.
-- Accidental closes (a reopen within :accidental_minutes after a close) as in p3_tasks.sql and
-- p3_signals.sql: the close is no completion, the reopen no signal.
WITH reopens AS (
    SELECT task_ref, `at`
    FROM task_events
    WHERE array_contains(split(:reopen_kinds, ','), kind)
       OR (kind = 'status_changed' AND detail RLIKE concat('(?i)', :reopen_status_pattern))
),
done_events AS (
    SELECT e.task_ref, e.`at`
    FROM task_events e
    LEFT ANTI JOIN reopens r
        ON r.task_ref = e.task_ref AND r.`at` >= e.`at`
       AND CAST(r.`at` AS DOUBLE) - CAST(e.`at` AS DOUBLE) <= :accidental_minutes * 60.0
    WHERE array_contains(split(:completion_kinds, ','), e.kind)
),
first_done AS (
    SELECT task_ref, min(`at`) AS first_at FROM done_events GROUP BY task_ref
),
last_done AS (
    SELECT t.task_ref, t.completed_at
    FROM tasks t
    LEFT ANTI JOIN reopens r
        ON r.task_ref = t.task_ref AND r.`at` >= t.completed_at
       AND CAST(r.`at` AS DOUBLE) - CAST(t.completed_at AS DOUBLE) <= :accidental_minutes * 60.0
    WHERE t.completed_at IS NOT NULL
),
completed AS (
    SELECT t.task_ref, t.origin,
           CASE WHEN f.first_at IS NOT NULL AND (l.completed_at IS NULL OR f.first_at < l.completed_at)
                THEN f.first_at ELSE l.completed_at END AS completed_at
    FROM tasks t
    LEFT JOIN first_done f ON f.task_ref = t.task_ref
    LEFT JOIN last_done l ON l.task_ref = t.task_ref
    WHERE l.completed_at IS NOT NULL OR f.first_at IS NOT NULL
),
own_times AS (
    SELECT origin, created_at AS t FROM tasks
    UNION ALL SELECT origin, completed_at FROM tasks
    UNION ALL SELECT origin, updated_on FROM tasks
    UNION ALL
    SELECT s.origin, e.`at` FROM task_events e JOIN tasks s ON s.task_ref = e.task_ref
    UNION ALL
    SELECT s.origin, target.created_at
    FROM task_links l JOIN tasks s ON s.task_ref = l.task_ref
    JOIN tasks target ON target.task_ref = l.target_ref
),
as_of AS (
    SELECT origin, max(t) AS data_as_of FROM own_times GROUP BY origin
),
linked AS (
    SELECT tc.task_ref, c.repo, c.sha, c.committer_time
    FROM task_commits tc
    JOIN commits c ON c.repo = tc.repo AND c.sha = tc.sha
    WHERE :commit_signals
),
link_rules AS (
    SELECT k.kind_pattern, d.direction
    FROM (SELECT posexplode(split(:link_kinds, '\t')) AS (pos, kind_pattern)) k
    JOIN (SELECT posexplode(split(:link_directions, '\t')) AS (pos, direction)) d
      ON d.pos = k.pos
),
signals AS (
    SELECT r.task_ref, r.`at` AS `at`, CAST(NULL AS TIMESTAMP) AS filed_at
    FROM reopens r
    LEFT ANTI JOIN task_events c
        ON c.task_ref = r.task_ref AND array_contains(split(:completion_kinds, ','), c.kind)
       AND c.`at` <= r.`at`
       AND CAST(r.`at` AS DOUBLE) - CAST(c.`at` AS DOUBLE) <= :accidental_minutes * 60.0
    UNION ALL
    SELECT l.task_ref, t.created_at, NULL
    FROM task_links l
    JOIN link_rules r ON r.direction = l.direction AND l.kind RLIKE concat('(?i)', r.kind_pattern)
    LEFT JOIN tasks t ON t.task_ref = l.target_ref
    UNION ALL
    SELECT e.task_ref, e.`at`, NULL
    FROM task_events e
    WHERE array_contains(split(:verified_kinds, ','), e.kind)
      AND coalesce(e.detail, '') RLIKE concat('(?i)', :verified_pattern)
    UNION ALL
    SELECT t.task_ref, t.updated_on, NULL
    FROM tasks t
    WHERE concat(coalesce(t.status, ''), ' ',
                 CASE WHEN t.labels IS NULL THEN '' ELSE array_join(t.labels, ' ') END)
          RLIKE concat('(?i)', :verified_pattern)
    UNION ALL
    SELECT e.task_ref, e.`at`, m.created_at
    FROM task_events e
    JOIN tasks m ON m.task_ref = regexp_extract(e.detail, '^\\S+ (\\S+)$', 1)
    WHERE array_contains(split(:cross_reference_kinds, ','), e.kind)
      AND e.detail RLIKE :cross_reference_pattern
      AND m.created_at IS NOT NULL
      AND concat(coalesce(m.title, ''), ' ',
                 CASE WHEN m.labels IS NULL THEN '' ELSE array_join(m.labels, ' ') END)
          RLIKE concat('(?i)', :problem_pattern)
    UNION ALL
    SELECT k.task_ref, r.committer_time, NULL
    FROM linked k
    JOIN commits r ON r.repo = k.repo AND r.is_revert AND NOT r.is_reapply
        AND r.reverts_sha IS NOT NULL AND length(r.reverts_sha) >= 7
        AND substr(k.sha, 1, length(r.reverts_sha)) = lower(r.reverts_sha)
    UNION ALL
    SELECT k.task_ref, f.committer_time, NULL
    FROM linked k
    JOIN commits f ON f.repo = k.repo AND f.is_fix_like AND NOT f.is_revert
        AND f.committer_time > k.committer_time
    JOIN commit_files kf ON kf.repo = k.repo AND kf.sha = k.sha
    JOIN commit_files ff ON ff.repo = f.repo AND ff.sha = f.sha AND ff.path = kf.path
    LEFT ANTI JOIN task_commits own
        ON own.task_ref = k.task_ref AND own.repo = f.repo AND own.sha = f.sha
),
eligible AS (  -- not right-censored: at least min_follow_up_days to the source's as_of
    SELECT c.task_ref, c.origin, c.completed_at
    FROM completed c
    JOIN as_of a ON a.origin = c.origin
    WHERE (CAST(a.data_as_of AS DOUBLE) - CAST(c.completed_at AS DOUBLE)) / 86400.0
          >= :min_follow_up_days
),
detected AS (  -- a dated signal within window_days after the (first) completion
    SELECT DISTINCT e.task_ref
    FROM eligible e
    JOIN signals s ON s.task_ref = e.task_ref
    WHERE s.`at` IS NOT NULL
      AND (s.filed_at IS NULL OR s.filed_at >= e.completed_at)  -- a mention: a later report
      AND (CAST(s.`at` AS DOUBLE) - CAST(e.completed_at AS DOUBLE)) / 86400.0
          BETWEEN 0 AND :window_days
)
SELECT e.origin, count(*) AS eligible, count(d.task_ref) AS detectable
FROM eligible e
LEFT JOIN detected d ON d.task_ref = e.task_ref
GROUP BY e.origin
ORDER BY e.origin
