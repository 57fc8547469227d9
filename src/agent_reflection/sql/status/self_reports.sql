-- `reflect status`, P1: the sidecars loaded, those with a confidence, and the degraded ones
-- (no usable self-report).
SELECT count(*) AS sidecars,
    count(confidence) AS with_confidence,
    count(*) FILTER (WHERE degraded) AS degraded
FROM reflections
