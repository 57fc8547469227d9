-- What the LLM tier said on each cycle pass.
SELECT cycle_run_id, status, model, detail, answer, skill_actions
FROM analyses
ORDER BY cycle_run_id
