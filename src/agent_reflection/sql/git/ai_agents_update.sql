-- Set `agent` and `agent_source` on the listed commits of $repo; the lists are zipped by
-- unnest().
UPDATE commits
SET agent = decided.agent, agent_source = decided.agent_source
FROM (
    SELECT unnest($shas::VARCHAR[]) AS sha, unnest($agents::VARCHAR[]) AS agent,
           unnest($sources::VARCHAR[]) AS agent_source
) AS decided
WHERE commits.repo = $repo AND commits.sha = decided.sha
