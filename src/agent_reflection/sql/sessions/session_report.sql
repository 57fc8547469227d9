-- One row per (session, repo): the session's last sidecar (its final self-report), the commits
-- it produced and how they were linked, and its outcome with the evidence commit's subject.
-- The query docs/loading.md shows; run it after `reflect load git`.
WITH last_sidecar AS (
    SELECT * FROM reflections
    QUALIFY row_number() OVER (PARTITION BY session_id ORDER BY "timestamp" DESC, content_hash) = 1
)
SELECT o.session_id, o.repo, r.agent, r.task_ref, r."timestamp" AS stopped_at, r.confidence,
       r.mlw_surface, r.known_not_in_diff,
       list(sc.sha ORDER BY c.committer_time, sc.sha) AS commits,
       list(c.subject ORDER BY c.committer_time, sc.sha) AS subjects,
       list(sc.link ORDER BY c.committer_time, sc.sha) AS links,
       o.outcome, o.rule, o.evidence_sha, e.subject AS evidence_subject, o.evidence_time
FROM session_outcomes o
JOIN last_sidecar r ON r.session_id = o.session_id
JOIN session_commits sc ON sc.session_id = o.session_id AND sc.repo = o.repo
JOIN commits c ON c.repo = sc.repo AND c.sha = sc.sha
LEFT JOIN commits e ON e.repo = o.repo AND e.sha = o.evidence_sha
GROUP BY ALL
ORDER BY o.repo, stopped_at, o.session_id
