-- `--now latest`: the newest finish time of the loaded run outcomes (NULL when none).
SELECT max(finished_at) FROM run_outcomes
