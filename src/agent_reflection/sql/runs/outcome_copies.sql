-- Outcomes of the registered Arrow table _new_outcomes that another file already holds with the
-- same content (session_id and raw record; none stored for $origin yet), each with the earliest
-- load that holds it.
SELECT n.session_id, min(c.load_id) AS load_id, arg_min(c.origin, c.load_id) AS origin
FROM _new_outcomes n
JOIN run_outcomes c ON c.session_id = n.session_id AND c.raw = n.raw AND c.origin <> $origin
ANTI JOIN run_outcomes o ON o.origin = $origin AND o.session_id = n.session_id
GROUP BY n.session_id
