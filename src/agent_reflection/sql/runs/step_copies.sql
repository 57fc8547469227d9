-- Steps of the registered Arrow table _new_steps that another file already holds with the same
-- content and that runs/insert_steps.sql therefore skips (none stored for $origin under that
-- step_key, session not in _own_sessions): per earlier load, how many. Each step counts once,
-- for the earliest load that holds it.
SELECT load_id, origin, count(*) AS records
FROM (
    SELECT n.step_key, min(c.load_id) AS load_id, arg_min(c.origin, c.load_id) AS origin
    FROM _new_steps n
    JOIN run_steps c ON c.session_id = n.session_id
        AND c.action = n.action
        AND c.seq IS NOT DISTINCT FROM n.seq
        AND c."at" IS NOT DISTINCT FROM n."at"
        AND c.tool IS NOT DISTINCT FROM n.tool
        AND c.input_summary IS NOT DISTINCT FROM n.input_summary
        AND c.output_summary IS NOT DISTINCT FROM n.output_summary
        AND c.skill IS NOT DISTINCT FROM n.skill
        AND c.origin <> $origin
    ANTI JOIN run_steps s ON s.origin = $origin AND s.step_key = n.step_key
    WHERE n.session_id NOT IN (SELECT session_id FROM _own_sessions)
    GROUP BY n.step_key
)
GROUP BY load_id, origin
ORDER BY load_id
