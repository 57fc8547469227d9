-- On a platform SQLite file: stamp task ? (2nd) as changed at ? (1st, epoch seconds), as the
-- platform's own pause_task does (Wintermute's tasks.updated).
UPDATE tasks SET updated = ? WHERE id = ?
