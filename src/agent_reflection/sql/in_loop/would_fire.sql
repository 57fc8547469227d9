-- Where the checkpoint fires at each cadence: every cadence-th call of a task (the hook resets
-- count and marker at each prompt, and calls arrive one at a time).
WITH cadences(cadence) AS (SELECT unnest($cadences::INTEGER[]))
SELECT c.cadence, t.session_id, t.seq, t.task_index, t.task_seq
FROM tool_calls t, cadences c
WHERE c.cadence > 0 AND t.task_seq % c.cadence = 0
ORDER BY c.cadence, t.session_id, t.seq;
