-- P1 loop labels: each session's last sidecar (its final self-report: confidence, most likely
-- wrong surface, known_not_in_diff), whatever its confidence.
SELECT session_id, agent, repo AS sidecar_repo, task_ref, "timestamp", confidence,
       mlw_surface, known_not_in_diff
FROM reflections
QUALIFY row_number() OVER (PARTITION BY session_id ORDER BY "timestamp" DESC, content_hash) = 1
ORDER BY session_id
