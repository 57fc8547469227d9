-- A 'running' load whose process is gone: it was killed before it finished. What it committed
-- stays (each batch is its own transaction); loading the same inputs again completes it.
UPDATE loads
SET status = 'interrupted',
    finished_at = coalesce(finished_at, $now),
    detail = json_merge_patch(coalesce(detail, '{}'), json_object('interrupted_seen_at', $now::VARCHAR))
WHERE load_id = $load_id AND status = 'running'
