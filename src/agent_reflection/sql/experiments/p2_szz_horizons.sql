-- P2: per repo, the narrowest blame horizon (days) its SZZ rows were loaded with; NULL when every
-- load blamed to the first commit (full depth, or loaded before SZZ_VERSION 4).
SELECT f.repo,
       min(TRY_CAST(json_extract_string(l.detail, '$.horizon_days') AS DOUBLE)) AS horizon_days
FROM (SELECT DISTINCT repo, load_id FROM fix_inducing) AS f
JOIN loads AS l ON l.load_id = f.load_id
GROUP BY f.repo
ORDER BY f.repo
