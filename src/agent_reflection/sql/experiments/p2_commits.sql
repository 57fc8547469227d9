-- P2: every commit with the message signals P2 reads; $time_column orders events. The
-- identities and the conventional scope feed the bot / bump / release rules (load/git/kinds.py).
SELECT repo, sha,
       CASE WHEN $time_column = 'author_time' THEN author_time ELSE committer_time END AS "at",
       subject, body, is_merge, is_revert, is_reapply, pr_number, cc_type, is_fix_like,
       coalesce(author_name, '') || ' <' || coalesce(author_email, '') || '>' AS author,
       coalesce(committer_name, '') || ' <' || coalesce(committer_email, '') || '>' AS committer,
       cc_scope
FROM commits
ORDER BY repo, "at", sha
