-- One simulated reflection.v1 sidecar row: stop-hook source, solo mode, no self-reported
-- most_likely_wrong / known_not_in_diff, and the empty risk floor of a change with no risky file.
INSERT INTO reflections (
    content_hash, schema_version, task_ref, agent, session_id, "timestamp", repo, confidence,
    mlw_surface, mlw_description, known_not_in_diff, risk_needs_review, risk_score, risk_surface,
    risk_reason, files_changed, source, reflection_attempt, degraded, reflection_mode,
    source_file, raw, load_id
)
VALUES (
    $content_hash, 'reflection.v1', $task_ref, $agent, $session_id, $timestamp, $repo,
    $confidence, NULL, NULL, NULL, $risk_needs_review, $risk_score, $risk_surface, $risk_reason,
    $files_changed, 'stop-hook', 1, $degraded, 'solo', 'simulated', $raw, $load_id
)
