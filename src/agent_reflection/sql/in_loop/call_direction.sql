-- Per tool call: did the next $window calls open a file or run a command (program) never seen
-- before in the session? A checkpoint "changed direction" when they did.
WITH calls AS (
    SELECT session_id, seq, task_index, task_seq, name, file_path, command,
           nullif(split_part(trim(command), ' ', 1), '') AS program,
           file_path IS NOT NULL
               AND row_number() OVER (PARTITION BY session_id, file_path ORDER BY seq) = 1
               AS new_file,
           command IS NOT NULL
               AND row_number() OVER (PARTITION BY session_id, command ORDER BY seq) = 1
               AS new_command
    FROM tool_calls
), programs AS (
    SELECT *, program IS NOT NULL
               AND row_number() OVER (PARTITION BY session_id, program ORDER BY seq) = 1
               AS new_program
    FROM calls
)
SELECT p.session_id, p.seq, p.task_index, p.task_seq,
       count(n.seq) AS next_calls,
       coalesce(bool_or(n.new_file), false) AS next_new_file,
       coalesce(bool_or(n.new_command), false) AS next_new_command,
       coalesce(bool_or(n.new_program), false) AS next_new_program,
       string_agg(n.name, ' ' ORDER BY n.seq) AS next_tools
FROM programs p
LEFT JOIN programs n
       ON n.session_id = p.session_id AND n.seq > p.seq AND n.seq <= p.seq + $window
GROUP BY ALL
ORDER BY p.session_id, p.seq;
