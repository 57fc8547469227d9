-- Sub-sessions that read each skill file, by the outcome of their run.
SELECT s.skill, o.status, count(DISTINCT s.session_id) AS sessions
FROM run_steps AS s
JOIN run_outcomes AS o USING (session_id)
WHERE s.skill IS NOT NULL
GROUP BY ALL
ORDER BY ALL
