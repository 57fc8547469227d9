-- The commits of one repo whose `agent` was matched by an older pattern table (or never):
-- what agents.refresh_agents matches again.
SELECT sha, subject, body, author_name, author_email, committer_name, committer_email
FROM commits
WHERE repo = $repo AND (agent_version IS NULL OR agent_version <> $version)
