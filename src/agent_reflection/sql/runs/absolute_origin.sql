-- Re-keying by origin: replace the relative origin $given by its absolute path $absolute in
-- {{table}} (the old-keyed table, or run_tasks).
UPDATE {{table}} SET origin = $absolute WHERE origin = $given
