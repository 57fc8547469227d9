-- Loads still marked 'running', with the process and machine that ran them (see db.mark_interrupted).
SELECT load_id, pid, host FROM loads WHERE status = 'running'
