-- One line of a transcript file (rows in parse order; lines already present were left out).
INSERT INTO messages (
    session_id,
    record_key,
    uuid,
    parent_uuid,
    line_type,
    role,
    ts,
    is_sidechain,
    is_meta,
    is_prompt,
    model,
    stop_reason,
    text,
    n_tool_use,
    n_tool_result,
    source_file,
    line_no,
    raw,
    load_id
)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
