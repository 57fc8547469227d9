-- One row per cycle pass: what triggered it, the clock it judged at, whether actions applied.
INSERT INTO cycle_runs (cycle_run_id, trigger, clock, lookback_seconds, source,
                        applied, findings, started_at)
VALUES ($cycle_run_id, $trigger, $clock, $lookback_seconds, $source,
        $applied, $findings, $started_at)
