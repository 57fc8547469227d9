-- On the platform's SQLite file: set task ? (2nd) back to status ? (1st) if it is still paused.
UPDATE tasks SET status = ? WHERE id = ? AND status = 'paused'
