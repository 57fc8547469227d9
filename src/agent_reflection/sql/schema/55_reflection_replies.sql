-- Replies of the reflection (unblocker) subagent as the SubagentStop hook judged them: one row
-- per line of its log (<state dir>/reflection-agent.jsonl). `reflect load reflection-replies`.
-- Keyed by the line's hash, so loading a grown log again adds only its new lines.

CREATE TABLE IF NOT EXISTS reflection_replies (
    reply_key      VARCHAR PRIMARY KEY,  -- 'sha256:<hex of the log line>'
    recorded_at    TIMESTAMPTZ,          -- when the hook ran (UTC)
    session_id     VARCHAR,              -- the parent session
    agent_id       VARCHAR,              -- the subagent run
    agent_type     VARCHAR,
    source         VARCHAR NOT NULL,     -- last_assistant_message | agent_transcript | none
    kind           VARCHAR,              -- output kind (escalation/contract.py OUTPUT_KINDS); NULL: none found
    valid          BOOLEAN NOT NULL,     -- the reply keeps the output contract
    problems       VARCHAR[] NOT NULL,   -- 'field: problem', one per contract breach
    need_context   VARCHAR,              -- target of [NEED_CONTEXT: target]
    attempt        INTEGER,              -- [ATTEMPT: N] of a terminal <ESCALATION>
    failure_layers VARCHAR[] NOT NULL,
    decision       VARCHAR,              -- block | pass | surface; NULL in logs older than the check
    text           VARCHAR NOT NULL,     -- the reply, first 4,000 characters
    source_file    VARCHAR NOT NULL,
    line_no        INTEGER NOT NULL,     -- 1-based line in source_file (first load wins)
    load_id        BIGINT NOT NULL
);
