-- Links of new and changed tasks, one per natural key; $1 = load_id.
INSERT INTO task_links (task_ref, target_ref, kind, direction, phrase, load_id)
SELECT DISTINCT ON (l.task_ref, l.target_ref, l.kind, l.direction)
       l.task_ref, l.target_ref, l.kind, l.direction, l.phrase, $1
FROM board_incoming_links AS l
JOIN board_touched AS b USING (task_ref)
WHERE b.state <> 'same'
ORDER BY l.task_ref, l.target_ref, l.kind, l.direction, l.phrase NULLS LAST
ON CONFLICT DO NOTHING;
