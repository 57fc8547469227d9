-- The first and last finish time of the loaded run outcomes (NULLs when none are loaded).
SELECT min(finished_at), max(finished_at) FROM run_outcomes
