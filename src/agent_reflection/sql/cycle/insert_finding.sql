-- One finding of a cycle pass ($seq: its place in the pass's rule order).
INSERT INTO findings (cycle_run_id, seq, rule, severity, subject_type, subject_id,
                      detail, action_taken, applied, clock)
VALUES ($cycle_run_id, $seq, $rule, $severity, $subject_type, $subject_id,
        $detail, $action_taken, $applied, $clock)
