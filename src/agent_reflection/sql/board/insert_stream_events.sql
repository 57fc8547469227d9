-- Event-stream records (GitHub issue events / timeline items), one row per natural key; an
-- event already stored (by any load, from any stream or the task's own record) is kept as is.
-- $1 = load_id. Returns the number of rows added.
INSERT INTO task_events (task_ref, "at", kind, detail, actor, via, load_id)
SELECT DISTINCT ON (e.task_ref, e."at", e.kind, coalesce(e.detail, ''))
       e.task_ref, e."at", e.kind, coalesce(e.detail, ''), e.actor, e.via, $1
FROM board_stream_events AS e
ORDER BY e.task_ref, e."at", e.kind, coalesce(e.detail, ''), e.actor NULLS LAST
ON CONFLICT DO NOTHING;
