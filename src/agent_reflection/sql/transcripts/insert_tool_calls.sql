-- A tool call with its result, rebuilt from its file on every load.
INSERT OR REPLACE INTO tool_calls (
    session_id,
    tool_use_id,
    seq,
    task_index,
    task_seq,
    message_uuid,
    name,
    input,
    command,
    file_path,
    called_at,
    result_uuid,
    result_text,
    is_error,
    result_at
)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
