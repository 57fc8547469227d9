-- One simulated reflection.v1 sidecar row, from the loader's own row function
-- (reflection.checks.reflection_row) and canonical encoding: the row `reflect load sidecars`
-- would store for the same record.
INSERT INTO reflections (
    content_hash, schema_version, task_ref, agent, session_id, "timestamp", repo, confidence,
    mlw_surface, mlw_description, known_not_in_diff, risk_needs_review, risk_score, risk_surface,
    risk_reason, files_changed, source, reflection_attempt, degraded, reflection_mode,
    source_file, raw, load_id
)
VALUES (
    $content_hash, $schema_version, $task_ref, $agent, $session_id,
    CAST($timestamp AS TIMESTAMPTZ), $repo, $confidence, $mlw_surface, $mlw_description,
    $known_not_in_diff, $risk_needs_review, $risk_score, $risk_surface, $risk_reason,
    $files_changed, $source, $reflection_attempt, $degraded, $reflection_mode, $source_file,
    CAST($raw AS JSON), $load_id
)
