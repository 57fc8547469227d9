-- Every finding of a cycle pass in one statement: parallel lists, one item per finding ($seqs:
-- each one's place in the pass's rule order).
INSERT INTO findings (cycle_run_id, seq, rule, severity, subject_type, subject_id,
                      detail, action_taken, applied, clock)
SELECT $cycle_run_id, unnest($seqs::INTEGER[]), unnest($rules::VARCHAR[]),
       unnest($severities::VARCHAR[]), unnest($subject_types::VARCHAR[]),
       unnest($subject_ids::VARCHAR[]), unnest($details::VARCHAR[]),
       unnest($actions::VARCHAR[]), unnest($applied::BOOLEAN[]), $clock
