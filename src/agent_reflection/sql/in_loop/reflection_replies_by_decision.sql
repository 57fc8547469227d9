-- Reflection replies by what the SubagentStop hook decided and the output kind.
SELECT coalesce(decision, 'not recorded') AS decision, coalesce(kind, 'none') AS kind,
       count(*) AS replies, count(*) FILTER (WHERE valid) AS valid
FROM reflection_replies
GROUP BY ALL
ORDER BY ALL
