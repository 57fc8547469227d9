-- An <ESCALATION> block of an assistant line, rebuilt from its file on every load.
INSERT OR REPLACE INTO escalations (
    session_id,
    record_key,
    block_index,
    after_seq,
    status,
    attempt,
    attempt_band,
    failure_layers,
    valid_trigger,
    valid_terminal,
    problems,
    ts,
    text
)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
