-- New steps from the registered Arrow table _new_steps (its columns are run_steps' columns but
-- origin and load_id); steps already stored for $origin (same step_key) are skipped.
INSERT INTO run_steps BY NAME
SELECT n.*, $origin AS origin, $load_id AS load_id FROM _new_steps n
ANTI JOIN run_steps s ON s.origin = $origin AND s.step_key = n.step_key
