-- The reflection cycle's latest action on task $1 when it was a pause (not resumed, not
-- re-enabled on the platform): one row with the SQLite file it was paused in (NULL: only here).
SELECT sqlite_source
FROM (SELECT action, sqlite_source FROM task_actions
      WHERE task_id = $1 ORDER BY "at" DESC LIMIT 1)
WHERE action = 'pause';
