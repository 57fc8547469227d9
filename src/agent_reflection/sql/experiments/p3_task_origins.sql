-- P3: the file each task was loaded from, joined onto its signals.
SELECT task_ref, origin FROM tasks
