-- Set `agent` (NULL: no mark) and the pattern version on the listed commits of one repo; the
-- lists are zipped by unnest().
UPDATE commits
SET agent = matched.agent, agent_version = $version
FROM (
    SELECT unnest($shas::VARCHAR[]) AS sha, unnest($agents::VARCHAR[]) AS agent
) AS matched
WHERE commits.repo = $repo AND commits.sha = matched.sha
