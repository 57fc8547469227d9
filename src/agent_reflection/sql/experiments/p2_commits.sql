-- P2: every commit with the message signals P2 reads; $time_column orders events.
SELECT repo, sha,
       CASE WHEN $time_column = 'author_time' THEN author_time ELSE committer_time END AS "at",
       subject, body, is_merge, is_revert, is_reapply, pr_number, cc_type, is_fix_like
FROM commits
ORDER BY repo, "at", sha
