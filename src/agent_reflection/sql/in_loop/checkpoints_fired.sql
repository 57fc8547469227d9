-- The cadence checkpoints the hook actually fired, per session, in order.
SELECT session_id, after_seq, delta, location FROM checkpoints ORDER BY ALL
