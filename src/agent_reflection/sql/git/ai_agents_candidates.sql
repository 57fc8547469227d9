-- The commits of $repo whose (agent, agent_source) may need setting: those with a mark or a
-- recorded source, and those a valid note names an agent for. The note kept per commit is the
-- git-ai one when both tools annotated it (ai_notes.apply_agents decides the rest).
WITH note AS (
    SELECT sha,
           arg_min(agent, CASE source WHEN 'git-ai-note' THEN 0 ELSE 1 END) AS note_agent,
           arg_min(source, CASE source WHEN 'git-ai-note' THEN 0 ELSE 1 END) AS note_source
    FROM ai_notes
    WHERE repo = $repo AND status = 'ok' AND agent IS NOT NULL
    GROUP BY sha
)
SELECT c.sha, c.subject, c.body, c.author_name, c.author_email, c.committer_name,
       c.committer_email, c.agent, c.agent_source, note.note_agent, note.note_source
FROM commits AS c
LEFT JOIN note ON note.sha = c.sha
WHERE c.repo = $repo
  AND (c.agent IS NOT NULL OR c.agent_source IS NOT NULL OR note.note_agent IS NOT NULL)
