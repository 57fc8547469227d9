-- Tasks completed at least once, with the source (origin) and format they came from, and the
-- channels each task itself carries (P3 decides only on tasks that carry every required one).
-- completed_at = the FIRST completion: the earliest event of a kind in $completion_kinds when
-- it precedes tasks.completed_at (an export's close/resolution date is the LAST one, so a task
-- reopened and closed again would otherwise have its reopen before its "completion"); a task
-- reopened and still open counts from its first completion too.
-- An accidental close (a reopen within $accidental_minutes of it, reopens as in
-- p3_signals.sql) is no completion.
-- has_history: the task has an event its record's own date fields do not make (the loaders
-- turn created/closed/resolved dates into events of those kinds): only then could a reopen show.
-- linked_commits: commits linked to the task that are in the loaded git history.
WITH reopens AS (
    SELECT task_ref, "at"
    FROM task_events
    WHERE list_contains($reopen_kinds, kind)
       OR (kind = 'status_changed' AND regexp_matches(detail, $reopen_status_pattern, 'i'))
),
done_events AS (
    SELECT e.task_ref, e."at"
    FROM task_events e
    WHERE list_contains($completion_kinds, e.kind)
      AND NOT EXISTS (
          SELECT 1 FROM reopens r
          WHERE r.task_ref = e.task_ref AND r."at" >= e."at"
            AND r."at" <= e."at" + to_minutes(CAST($accidental_minutes AS BIGINT))
      )
),
first_done AS (
    SELECT task_ref, min("at") AS first_at FROM done_events GROUP BY task_ref
),
last_done AS (  -- the export's completed_at, unless a reopen right after it made it accidental
    SELECT t.task_ref, t.completed_at
    FROM tasks t
    WHERE t.completed_at IS NOT NULL
      AND NOT EXISTS (
          SELECT 1 FROM reopens r
          WHERE r.task_ref = t.task_ref AND r."at" >= t.completed_at
            AND r."at" <= t.completed_at + to_minutes(CAST($accidental_minutes AS BIGINT))
      )
),
history AS (
    SELECT DISTINCT task_ref
    FROM task_events
    WHERE coalesce(via, 'record') <> 'record'
       OR NOT (kind = 'created' OR list_contains($completion_kinds, kind))
),
linked AS (
    SELECT tc.task_ref, count(*) AS linked_commits
    FROM task_commits tc
    JOIN commits c ON c.repo = tc.repo AND c.sha = tc.sha
    GROUP BY tc.task_ref
)
SELECT t.task_ref,
       coalesce(t.project, t.origin) AS project,
       t.origin,
       t.source,
       t.category,
       CASE WHEN f.first_at IS NOT NULL AND (l.completed_at IS NULL OR f.first_at < l.completed_at)
            THEN f.first_at ELSE l.completed_at END AS completed_at,
       t.created_at,
       h.task_ref IS NOT NULL AS has_history,
       coalesce(k.linked_commits, 0) AS linked_commits
FROM tasks t
LEFT JOIN first_done f USING (task_ref)
LEFT JOIN last_done l USING (task_ref)
LEFT JOIN history h USING (task_ref)
LEFT JOIN linked k USING (task_ref)
WHERE l.completed_at IS NOT NULL OR f.first_at IS NOT NULL
ORDER BY t.task_ref
