-- A session's summary, rebuilt from its file on every load (no load id: a reload is identical).
INSERT OR REPLACE INTO sessions (
    session_id,
    source_file,
    first_ts,
    last_ts,
    cwd,
    git_branch,
    cli_version,
    first_prompt,
    n_lines,
    n_prompts,
    n_tool_calls,
    n_checkpoints,
    n_escalations
)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
