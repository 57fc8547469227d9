-- On a platform SQLite file: log tier 2's answer as the platform's reflection loop does (action
-- reflection_analysis, session system:reflection, llm = the model, output = the prose cut at
-- $output_limit characters, the whole answer in raw_output when it was cut), unless the same
-- findings ($input names their ids) were analysed there before.
INSERT INTO interaction_log (timestamp, action, session, llm, input, output, status, raw_output)
SELECT $timestamp, 'reflection_analysis', 'system:reflection', $llm, $input, $output, 'ok',
       $raw_output
WHERE NOT EXISTS (
    SELECT 1 FROM interaction_log
    WHERE action = 'reflection_analysis' AND session = 'system:reflection' AND input = $input
)
