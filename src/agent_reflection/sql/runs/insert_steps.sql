-- New steps from the registered Arrow table _new_steps (its columns are run_steps' columns but
-- origin and load_id); steps already stored for $origin (same step_key) are skipped, and so are
-- steps another file already holds with the same content (every column but step_key, which
-- names the file for a SQLite source), e.g. a copy of this file, unless their session is one of
-- this file's own (_own_sessions: its outcome here is not a copy, e.g. another platform's
-- database that reuses the session id).
INSERT INTO run_steps BY NAME
SELECT n.*, $origin AS origin, $load_id AS load_id FROM _new_steps n
ANTI JOIN run_steps s ON s.origin = $origin AND s.step_key = n.step_key
WHERE n.session_id IN (SELECT session_id FROM _own_sessions)
   OR NOT EXISTS (
       SELECT 1 FROM run_steps c
       WHERE c.session_id = n.session_id
         AND c.action = n.action
         AND c.seq IS NOT DISTINCT FROM n.seq
         AND c."at" IS NOT DISTINCT FROM n."at"
         AND c.tool IS NOT DISTINCT FROM n.tool
         AND c.input_summary IS NOT DISTINCT FROM n.input_summary
         AND c.output_summary IS NOT DISTINCT FROM n.output_summary
         AND c.skill IS NOT DISTINCT FROM n.skill)
