-- Every finding of a cycle pass in one statement: parallel lists, one item per finding ($seqs:
-- each one's place in the pass's rule order). Each list comes as one JSON text: DuckDB's client
-- checks every item of a Python list for a pandas type, and with pandas not imported (a pass
-- keeps it out) that check costs 15 us an item.
INSERT INTO findings (cycle_run_id, seq, rule, severity, subject_type, subject_id,
                      detail, action_taken, applied, clock)
SELECT $cycle_run_id,
       unnest(from_json($seqs, '["INTEGER"]')),
       unnest(from_json($rules, '["VARCHAR"]')),
       unnest(from_json($severities, '["VARCHAR"]')),
       unnest(from_json($subject_types, '["VARCHAR"]')),
       unnest(from_json($subject_ids, '["VARCHAR"]')),
       unnest(from_json($details, '["VARCHAR"]')),
       unnest(from_json($actions, '["VARCHAR"]')),
       unnest(from_json($applied, '["BOOLEAN"]')),
       $clock
