-- One platform task as the run log describes it ($status: effective, which a pause by the
-- reflection cycle keeps at 'paused'; $source_status: as the log says).
INSERT INTO run_tasks (task_id, status, source_status, run_count, ai_prompt,
                       last_result_summary, implicit, origin, load_id)
VALUES ($task_id, $status, $source_status, $run_count, $ai_prompt,
        $last_result_summary, $implicit, $origin, $load_id)
