-- The data's "now": the latest timestamp anywhere in the board and git tables.
SELECT greatest(
    (SELECT max(greatest(coalesce(updated_on, completed_at, created_at),
                         coalesce(completed_at, created_at, updated_on))) FROM tasks),
    (SELECT max("at") FROM task_events),
    (SELECT max(committer_time) FROM commits)
) AS as_of
