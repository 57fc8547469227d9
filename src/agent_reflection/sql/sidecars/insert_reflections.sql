-- One batch of validated sidecars (registered as `sidecar_batch`) into `reflections`.
-- Skips records already stored, so re-loading is a no-op (the loader has already dropped
-- repeated records inside the batch). $load_id: the load. Returns the number of rows inserted.
INSERT INTO reflections (
    content_hash, schema_version, task_ref, agent, session_id, "timestamp", repo, confidence,
    mlw_surface, mlw_description, known_not_in_diff, risk_needs_review, risk_score, risk_surface,
    risk_reason, files_changed, source, reflection_attempt, degraded, reflection_mode,
    git_branch, git_head_start, git_head_stop, source_file, raw, load_id
)
SELECT
    b.content_hash, b.schema_version, b.task_ref, b.agent, b.session_id,
    CAST(b."timestamp" AS TIMESTAMPTZ), b.repo, b.confidence, b.mlw_surface, b.mlw_description,
    b.known_not_in_diff, b.risk_needs_review, b.risk_score, b.risk_surface, b.risk_reason,
    b.files_changed, b.source, CAST(b.reflection_attempt AS INTEGER), b.degraded,
    b.reflection_mode, b.git_branch, b.git_head_start, b.git_head_stop, b.source_file,
    CAST(b.raw AS JSON), $load_id
FROM sidecar_batch AS b
WHERE NOT EXISTS (SELECT 1 FROM reflections AS r WHERE r.content_hash = b.content_hash)
