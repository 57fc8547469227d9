-- The task matcher's input: every stored commit's message (subject, newline, body).
SELECT repo, sha, subject || chr(10) || body FROM commits
