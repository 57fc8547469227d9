-- Steps stored (before and after an insert: the difference is what it added).
SELECT count(*) FROM run_steps
