-- Claude Code session transcripts (JSONL). One row per line in `messages` (unknown line types
-- kept with their raw JSON); tool calls, checkpoint prompts and escalation blocks derived from
-- them. Derived tables carry no load_id, so loading a file again leaves every table identical.

CREATE TABLE IF NOT EXISTS messages (
    session_id     VARCHAR NOT NULL,   -- sessionId of the line, else of the file
    record_key     VARCHAR NOT NULL,   -- uuid, else 'sha256:<hex of the raw line>'
    uuid           VARCHAR,
    parent_uuid    VARCHAR,            -- threading follows parent_uuid -> uuid, not file order
    line_type      VARCHAR NOT NULL,   -- user | assistant | queue-operation | summary | system | ...
    role           VARCHAR,
    ts             TIMESTAMPTZ,
    is_sidechain   BOOLEAN,
    is_meta        BOOLEAN NOT NULL,   -- harness-injected user line (e.g. Stop hook feedback)
    is_prompt      BOOLEAN NOT NULL,   -- a real user prompt (starts a task; UserPromptSubmit)
    model          VARCHAR,
    stop_reason    VARCHAR,
    text           VARCHAR,            -- text blocks (or string content) joined by newlines
    n_tool_use     INTEGER NOT NULL,
    n_tool_result  INTEGER NOT NULL,
    source_file    VARCHAR NOT NULL,
    line_no        INTEGER NOT NULL,   -- 1-based line in source_file (first load wins)
    raw            JSON NOT NULL,
    load_id        BIGINT NOT NULL,
    PRIMARY KEY (session_id, record_key)
);

CREATE TABLE IF NOT EXISTS sessions (
    session_id     VARCHAR PRIMARY KEY,
    source_file    VARCHAR NOT NULL,
    first_ts       TIMESTAMPTZ,
    last_ts        TIMESTAMPTZ,
    cwd            VARCHAR,
    git_branch     VARCHAR,
    cli_version    VARCHAR,
    first_prompt   VARCHAR,
    n_lines        INTEGER NOT NULL,
    n_prompts      INTEGER NOT NULL,
    n_tool_calls   INTEGER NOT NULL,
    n_checkpoints  INTEGER NOT NULL,
    n_escalations  INTEGER NOT NULL
);

CREATE TABLE IF NOT EXISTS tool_calls (
    session_id     VARCHAR NOT NULL,
    tool_use_id    VARCHAR NOT NULL,
    seq            INTEGER NOT NULL,   -- 1-based order of the call in the session (file order)
    task_index     INTEGER NOT NULL,   -- prompts seen before the call (0 = before any prompt)
    task_seq       INTEGER NOT NULL,   -- 1-based order within the task (what the hook counts)
    message_uuid   VARCHAR,
    name           VARCHAR NOT NULL,
    input          JSON,
    command        VARCHAR,            -- Bash input.command
    file_path      VARCHAR,            -- input.file_path / input.path / input.notebook_path
    called_at      TIMESTAMPTZ,
    result_uuid    VARCHAR,
    result_text    VARCHAR,            -- first 2,000 characters of the tool result
    is_error       BOOLEAN,
    result_at      TIMESTAMPTZ,
    PRIMARY KEY (session_id, tool_use_id)
);

CREATE TABLE IF NOT EXISTS checkpoints (
    session_id     VARCHAR NOT NULL,
    record_key     VARCHAR NOT NULL,
    json_path      VARCHAR NOT NULL,   -- where in the line the prompt was found
    location       VARCHAR NOT NULL,   -- tool_result | additional_context | attachment | user_text | other
    after_seq      INTEGER NOT NULL,   -- tool calls in the session before the checkpoint
    delta          INTEGER,            -- "<N> tool calls since the last checkpoint"
    task_text      VARCHAR,            -- the ORIGINAL TASK shown, if any
    ts             TIMESTAMPTZ,
    text           VARCHAR NOT NULL,
    PRIMARY KEY (session_id, record_key, json_path)
);

CREATE TABLE IF NOT EXISTS escalations (
    session_id     VARCHAR NOT NULL,
    record_key     VARCHAR NOT NULL,
    block_index    INTEGER NOT NULL,   -- order of the block within the line
    after_seq      INTEGER NOT NULL,
    status         VARCHAR,
    attempt        INTEGER,
    attempt_band   VARCHAR,            -- 1-2 | 3 | 4+ (unblocker | context override | terminal)
    failure_layers VARCHAR[] NOT NULL,
    valid_trigger  BOOLEAN NOT NULL,
    valid_terminal BOOLEAN NOT NULL,
    problems       VARCHAR[] NOT NULL, -- terminal-contract problems, "field: problem"
    ts             TIMESTAMPTZ,
    text           VARCHAR NOT NULL,
    PRIMARY KEY (session_id, record_key, block_index)
);
