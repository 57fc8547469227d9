-- $repo's sessions per outcome.
SELECT outcome, count(*) FROM session_outcomes WHERE repo = $repo GROUP BY outcome ORDER BY outcome
