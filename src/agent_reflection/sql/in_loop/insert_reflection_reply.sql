-- One reflection reply from the SubagentStop log; a line already loaded (same reply_key) is
-- skipped. Returns a row only when it was inserted.
INSERT INTO reflection_replies (reply_key, recorded_at, session_id, agent_id, agent_type, source,
                                kind, valid, problems, need_context, attempt, failure_layers,
                                decision, text, source_file, line_no, load_id)
VALUES ($reply_key, $recorded_at, $session_id, $agent_id, $agent_type, $source, $kind, $valid,
        $problems, $need_context, $attempt, $failure_layers, $decision, $text, $source_file,
        $line_no, $load_id)
ON CONFLICT (reply_key) DO NOTHING
RETURNING reply_key
