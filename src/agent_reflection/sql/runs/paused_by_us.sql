-- Non-empty when the reflection cycle's latest action on task $1 was a pause (not resumed).
SELECT 1
FROM (SELECT action FROM task_actions WHERE task_id = $1 ORDER BY "at" DESC LIMIT 1)
WHERE action = 'pause';
