-- New and changed tasks; $1 = load_id.
INSERT INTO tasks (task_ref, uuid, origin, source, category, updated_on, title, kind, project,
                   created_at, completed_at, status, resolution, priority, labels, fingerprint,
                   raw, load_id)
SELECT i.task_ref, i.uuid, i.origin, i.source, i.category, i.updated_on, i.title, i.kind,
       i.project, i.created_at, i.completed_at, i.status, i.resolution, i.priority, i.labels,
       i.fingerprint, i.raw::JSON, $1
FROM board_incoming AS i
JOIN board_touched AS b USING (task_ref)
WHERE b.state <> 'same';
