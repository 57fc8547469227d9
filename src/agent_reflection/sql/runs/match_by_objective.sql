-- Outcomes recorded without a task_id: attribute each to the task whose ai_prompt its objective
-- contains (the longest such prompt wins; prompts shorter than $1 characters never match), and
-- mark them matched_by = 'objective'.
UPDATE run_outcomes o
SET task_id = m.task_id, matched_by = 'objective'
FROM (
    SELECT o.origin, o.session_id,
           first(t.task_id ORDER BY length(t.ai_prompt) DESC, t.task_id) AS task_id
    FROM run_outcomes o
    JOIN run_tasks t
      ON t.ai_prompt IS NOT NULL
     AND length(t.ai_prompt) >= $1
     AND contains(o.objective, t.ai_prompt)
    WHERE o.task_id IS NULL
    GROUP BY o.origin, o.session_id
) m
WHERE o.origin = m.origin AND o.session_id = m.session_id;
