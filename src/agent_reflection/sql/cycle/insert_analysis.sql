-- Tier 2's analysis of a pass's findings (or why it was skipped or failed).
INSERT INTO analyses (cycle_run_id, status, model, prompt, answer, skill_actions,
                      task_actions, detail, "at")
VALUES ($cycle_run_id, $status, $model, $prompt, $answer, $skill_actions,
        $task_actions, $detail, $at)
