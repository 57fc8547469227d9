-- One simulated board task (source jsonl unless given, category and kind 'task').
INSERT INTO tasks (
    task_ref, uuid, origin, source, category, updated_on, title, kind, project, created_at,
    completed_at, status, labels, fingerprint, raw, load_id
)
VALUES (
    $task_ref, $uuid, $origin, $source, 'task', $updated_on, $title, 'task', $project,
    $created_at, $completed_at, $status, $labels, $fingerprint, $raw, $load_id
)
