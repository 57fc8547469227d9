-- Which outcomes of the registered Arrow table _new_outcomes are not stored yet (read before
-- runs/insert_outcomes.sql adds them): not for $origin (same session_id), and not with the same
-- content (session_id and raw record) from any other file, e.g. a copy of this file.
SELECT n.session_id, n.task_id, n.status FROM _new_outcomes n
ANTI JOIN run_outcomes o ON o.origin = $origin AND o.session_id = n.session_id
ANTI JOIN run_outcomes c ON c.session_id = n.session_id AND c.raw = n.raw
