-- On a platform SQLite file: log one finding as the platform's reflection loop does
-- (action reflection_rule, session system:reflection, llm rule_engine, input = the rule, output =
-- the finding as JSON), unless a row with the same finding_id is there already (a pass repeated
-- over the same data adds nothing).
INSERT INTO interaction_log (timestamp, action, session, llm, input, output, status)
SELECT $timestamp, 'reflection_rule', 'system:reflection', 'rule_engine', $rule, $output, 'ok'
WHERE NOT EXISTS (
    SELECT 1 FROM interaction_log
    WHERE action = 'reflection_rule'
      AND session = 'system:reflection'
      AND json_extract(output, '$.finding_id') = $finding_id
)
