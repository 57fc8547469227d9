-- How often steps ended each way (e.g. a failed command), in failed vs completed runs.
SELECT o.status, s.output_summary AS step_outcome, count(*) AS steps
FROM run_steps AS s
JOIN run_outcomes AS o USING (session_id)
GROUP BY ALL
ORDER BY ALL
