-- A task that changed on the board is replaced whole: its row, and the events and links its own
-- record gave (via 'record'); events and links loaded from event streams beside it stay.
DELETE FROM task_events WHERE task_ref IN (SELECT task_ref FROM board_touched WHERE state = 'changed')
    AND coalesce(via, 'record') = 'record';
DELETE FROM task_links WHERE task_ref IN (SELECT task_ref FROM board_touched WHERE state = 'changed')
    AND coalesce(via, 'record') = 'record';
DELETE FROM tasks WHERE task_ref IN (SELECT task_ref FROM board_touched WHERE state = 'changed');
