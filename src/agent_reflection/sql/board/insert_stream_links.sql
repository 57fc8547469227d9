-- Links of event-stream records (a cross-reference), one per natural key; $1 = load_id.
INSERT INTO task_links (task_ref, target_ref, kind, direction, phrase, via, load_id)
SELECT DISTINCT ON (l.task_ref, l.target_ref, l.kind, l.direction)
       l.task_ref, l.target_ref, l.kind, l.direction, l.phrase, l.via, $1
FROM board_stream_links AS l
ORDER BY l.task_ref, l.target_ref, l.kind, l.direction, l.phrase NULLS LAST
ON CONFLICT DO NOTHING;
