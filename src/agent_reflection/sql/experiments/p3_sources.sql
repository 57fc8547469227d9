-- One row per source (a board export, told apart by its origin): its format(s), task count,
-- the latest timestamp among its OWN board records (its tasks, their events, the tasks its
-- links point at) and how many commits are linked to its tasks. Nothing else moves a
-- source's as_of: not another board, not a git history, not even a commit naming one of its
-- tasks (one such commit dated years later would give every task years of follow-up in which
-- the board could not show a reopen).
WITH own_times AS (
    SELECT origin, created_at AS t FROM tasks
    UNION ALL SELECT origin, completed_at FROM tasks
    UNION ALL SELECT origin, updated_on FROM tasks
    UNION ALL
    SELECT s.origin, e."at" FROM task_events e JOIN tasks s USING (task_ref)
    UNION ALL
    SELECT s.origin, target.created_at
    FROM task_links l JOIN tasks s USING (task_ref)
    JOIN tasks target ON target.task_ref = l.target_ref
),
latest AS (
    SELECT origin, max(t) AS data_as_of FROM own_times GROUP BY origin
),
linked AS (
    SELECT s.origin, count(*) AS linked_commits
    FROM task_commits tc JOIN tasks s USING (task_ref)
    JOIN commits c ON c.repo = tc.repo AND c.sha = tc.sha
    GROUP BY s.origin
),
own AS (
    SELECT origin,
           string_agg(DISTINCT source, ',' ORDER BY source) AS format,
           count(*) AS tasks
    FROM tasks GROUP BY origin
)
SELECT own.origin, own.format, own.tasks, latest.data_as_of,
       coalesce(linked.linked_commits, 0) AS linked_commits
FROM own
LEFT JOIN latest USING (origin)
LEFT JOIN linked USING (origin)
ORDER BY own.origin
