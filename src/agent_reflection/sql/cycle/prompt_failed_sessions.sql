-- Tier 2 prompt: the newest failing sub-sessions of the lookback window ($lookback_seconds
-- before $now, up to $now), objectives cut to 160 characters, at most $limit.
SELECT session_id, coalesce(task_id, '-'), status, finished_at,
       left(coalesce(objective, ''), 160)
FROM run_outcomes
WHERE status IN ('failed', 'timeout')
  AND finished_at > $now::TIMESTAMPTZ - to_seconds($lookback_seconds)
  AND finished_at <= $now::TIMESTAMPTZ
ORDER BY finished_at DESC LIMIT $limit
