-- (source, project, task_ref) of every task: the matcher's knowledge of the boards.
SELECT source, project, task_ref FROM tasks;
