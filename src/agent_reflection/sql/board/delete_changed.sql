-- A task that changed on the board is replaced whole: its row, events and links.
DELETE FROM task_events WHERE task_ref IN (SELECT task_ref FROM board_touched WHERE state = 'changed');
DELETE FROM task_links WHERE task_ref IN (SELECT task_ref FROM board_touched WHERE state = 'changed');
DELETE FROM tasks WHERE task_ref IN (SELECT task_ref FROM board_touched WHERE state = 'changed');
