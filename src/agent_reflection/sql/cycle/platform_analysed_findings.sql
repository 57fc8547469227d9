-- On a platform SQLite file: the input of every analysis the reflection cycle logged there
-- ("N finding(s): <finding ids>").
SELECT input
FROM interaction_log
WHERE action = 'reflection_analysis' AND session = 'system:reflection'
