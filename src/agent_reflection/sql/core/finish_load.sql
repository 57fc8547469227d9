-- End a load: its final counts, status (ok | failed: see db.LoadRun.problem) and loader-specific detail.
UPDATE loads
SET finished_at = $finished_at, rows_read = $read, rows_loaded = $loaded,
    rows_rejected = $rejected, rows_already_present = $already_present, status = $status,
    detail = $detail
WHERE load_id = $load_id
