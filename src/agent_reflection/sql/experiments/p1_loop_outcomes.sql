-- P1 loop labels: the stored session outcomes (`reflect load git`), with the parameters they used.
SELECT session_id, repo, outcome, rule, commit_sha, evidence_sha, window_days, ignore_cosmetic_fixes,
       szz_loaded
FROM session_outcomes
ORDER BY repo, session_id
