-- The outcomes inside the window ($2, $1] ($2 = $1 - lookback): the rules' working set, kept as a
-- small temporary table so the history is touched only where a rule needs it.
CREATE OR REPLACE TEMP TABLE cycle_window AS
SELECT task_id, session_id, status, finished_at, result_length
FROM run_outcomes
WHERE finished_at > $2::TIMESTAMPTZ AND finished_at <= $1::TIMESTAMPTZ;
