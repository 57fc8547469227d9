-- P2: whether the board tables review evidence is read from exist (a git-only database lacks them).
SELECT table_name FROM information_schema.tables
WHERE table_schema = 'main' AND table_name IN ('tasks', 'task_events', 'task_commits')
