-- On the platform's SQLite file: pause task ? if it is active (rowcount 1: paused now).
UPDATE tasks SET status = 'paused' WHERE id = ? AND status = 'active'
