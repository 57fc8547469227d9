-- Each incoming CI run against what is stored: new | same (fingerprint equal) | changed.
SELECT CASE WHEN c.repo IS NULL THEN 'new'
            WHEN c.fingerprint = i.fingerprint THEN 'same'
            ELSE 'changed' END AS state,
       count(*) AS runs
FROM ci_incoming AS i
LEFT JOIN ci_runs AS c USING (repo, sha, kind, name, run_id, attempt)
GROUP BY ALL
