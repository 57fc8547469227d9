-- Agent vs human: every loaded commit of one repo, dated by $time_column, with the code lines it
-- added (non-binary files) and its agent mark (agent_version NULL: loaded before the column); the
-- identities, message, conventional type / scope and paths feed the bot / bump / release rules
-- (load/git/kinds.py) and the change kind.
SELECT c.sha,
       c.agent,
       CASE WHEN $time_column = 'author_time' THEN c.author_time ELSE c.committer_time END AS "at",
       c.is_merge,
       c.files_available,
       (SELECT coalesce(sum(f.added), 0) FROM commit_files AS f
        WHERE f.repo = c.repo AND f.sha = c.sha AND NOT f."binary") AS lines_added,
       c.agent_version,
       coalesce(c.author_name, '') || ' <' || coalesce(c.author_email, '') || '>' AS author,
       coalesce(c.committer_name, '') || ' <' || coalesce(c.committer_email, '') || '>' AS committer,
       c.subject,
       c.body,
       c.cc_type,
       c.cc_scope,
       (SELECT coalesce(list(f.path ORDER BY f.path), []) FROM commit_files AS f
        WHERE f.repo = c.repo AND f.sha = c.sha) AS paths
FROM commits AS c
WHERE c.repo = $repo
ORDER BY "at", c.sha
