-- Events of new and changed tasks, one per natural key; $1 = load_id.
INSERT INTO task_events (task_ref, "at", kind, detail, actor, load_id)
SELECT DISTINCT ON (e.task_ref, e."at", e.kind, coalesce(e.detail, ''))
       e.task_ref, e."at", e.kind, coalesce(e.detail, ''), e.actor, $1
FROM board_incoming_events AS e
JOIN board_touched AS b USING (task_ref)
WHERE b.state <> 'same'
ORDER BY e.task_ref, e."at", e.kind, coalesce(e.detail, ''), e.actor NULLS LAST
ON CONFLICT DO NOTHING;
