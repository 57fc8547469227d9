-- How many run outcomes the database holds (the notebook loads the run logs when none).
SELECT count(*) FROM run_outcomes
