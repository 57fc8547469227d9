-- A checkpoint prompt found in a line, rebuilt from its file on every load.
INSERT OR REPLACE INTO checkpoints (
    session_id,
    record_key,
    json_path,
    location,
    after_seq,
    delta,
    task_text,
    ts,
    text
)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
