-- What is stored for task $task_id: compared with a task record to tell new, same or changed.
SELECT source_status, run_count, ai_prompt, last_result_summary, implicit
FROM run_tasks WHERE task_id = $task_id
