-- The tier-1 statement as it was before the findings were built in bulk (kept to check that
-- the bulk version returns the same findings in the same order: tests/test_cycle_rules_bulk.py).
-- Tier 1: the four rules in one statement, one row per finding candidate (rule, subject_id, ...).
-- It reads run_outcomes once over the recent past ($horizon, $now], which holds the window
-- ($start, $now] and, nearly always, every older outcome a rule needs; a second read, of the rest
-- of the history, happens only for tasks that recent past does not settle. Per-task work starts with cheap counts and maxima; rows are put in
-- order only for the tasks a rule can still fire on. (One statement and no temporary tables:
-- copying the window into a table, or sorting structs, cost more here than the scans.)
--
-- Outcome order is newest first by finished_at, then session_id. Failing = failed or timeout.
--
-- consecutive_failures. Candidates are the tasks with an outcome in the window. The streak counts
--   the task's newest outcomes over its whole history up to the clock (at most $scan_limit) that
--   are failing, stopping at the first other status. It can only reach back before the window
--   when every window outcome failed and there are fewer than $scan_limit of them: only those
--   tasks read older history, and only from their newest non-failing outcome on. Rows: every
--   candidate with a streak of at least $min_streak (0: all of them).
-- timeout_pattern. The task's outcomes inside the window: at least $timeout_limit of them, and the
--   newest $timeout_limit all timed out.
-- stale_task. Active tasks with run_count > 0 and a non-empty ai_prompt whose recent results are
--   all shorter than $min_result_length characters. Recent results: the task's outcomes with a
--   known result_length inside the window, and always its newest such outcome up to the clock
--   (older history, when the window has none). A task with no outcome at all is judged on its
--   last_result_summary (missing counts as ''); one whose outcomes all come after the clock (or
--   lack a length) is skipped.
-- skill_failure_correlation. Skills read (run_steps.skill, action tool_call) in at least
--   $skill_min_sessions distinct failing sub-sessions that finished inside the window (reads =
--   rows, for comparison with the peer's row count). A sub-session is (origin, session_id):
--   two source files may reuse a session id. Steps exported in a file with no outcome in the
--   recent past (a steps-only export) match the session's outcomes in the other files.
--
-- The task's status (paused tasks are skipped) and the rule order are applied by the caller.
WITH recent AS MATERIALIZED (
    SELECT task_id, origin, session_id, finished_at, result_length,
           status IN ('failed', 'timeout') AS failing,
           status = 'timeout' AS timeout
    FROM run_outcomes
    WHERE finished_at > $horizon::TIMESTAMPTZ
      AND finished_at <= $now::TIMESTAMPTZ
),
in_window AS (
    SELECT * FROM recent WHERE finished_at > $start::TIMESTAMPTZ
),
win AS (
    SELECT task_id,
           count(*) AS n,
           count(*) FILTER (WHERE failing) AS failing,
           count(*) FILTER (WHERE timeout) AS timeouts,
           max(finished_at) AS latest_at,
           count(result_length) AS results,
           max(result_length) AS longest
    FROM in_window
    WHERE task_id IS NOT NULL
    GROUP BY task_id
),
-- tasks whose window outcomes must be put in order (newest first): a streak or a timeout tail
-- is possible; a sorted list of {at, id, ...} per task (a struct compares field by field)
tails AS (
    SELECT task_id, n, latest_at, newest,
           coalesce(list_position(list_transform(newest, x -> x.failing), false) - 1, n)
               AS streak,
           coalesce(list_position(list_transform(newest, x -> x.timeout), false) - 1, n)
               AS newest_timeouts
    FROM (
        SELECT o.task_id,
               count(*) AS n,
               max(o.finished_at) AS latest_at,
               list_reverse_sort(list({'at': o.finished_at, 'id': o.session_id,
                                       'failing': o.failing, 'timeout': o.timeout})) AS newest
        FROM in_window o
        JOIN win w ON w.task_id = o.task_id
        WHERE w.failing >= $min_streak
           OR w.failing = w.n
           OR (w.n >= $timeout_limit AND w.timeouts >= $timeout_limit)
        GROUP BY o.task_id
    )
),
eligible AS (
    SELECT task_id, last_result_summary
    FROM run_tasks
    WHERE status = 'active'
      AND coalesce(run_count, 0) > 0
      AND coalesce(trim(ai_prompt), '') <> ''
),
needs_history AS (
    SELECT task_id, bool_or(for_streak) AS for_streak, bool_or(for_stale) AS for_stale
    FROM (
        SELECT task_id, TRUE AS for_streak, FALSE AS for_stale
        FROM tails
        WHERE streak = n AND n < $scan_limit
        UNION ALL
        SELECT e.task_id, FALSE, TRUE
        FROM eligible e
        LEFT JOIN win w ON w.task_id = e.task_id
        WHERE coalesce(w.results, 0) = 0
    )
    GROUP BY task_id
),
recent_older AS MATERIALIZED (
    SELECT task_id, origin, session_id, finished_at, result_length, failing
    FROM recent
    WHERE task_id IN (SELECT task_id FROM needs_history)
),
-- tasks the recent past ($horizon, $now] does not settle: no non-failing outcome before the
-- window and fewer than $scan_limit outcomes there (streak), or no result length (stale_task)
unsettled AS (
    SELECT h.task_id
    FROM needs_history h
    LEFT JOIN (
        SELECT task_id,
               bool_or(NOT failing AND finished_at <= $start::TIMESTAMPTZ) AS ok_before,
               count(*) FILTER (WHERE finished_at <= $start::TIMESTAMPTZ) AS before,
               bool_or(result_length IS NOT NULL) AS has_length
        FROM recent_older
        GROUP BY task_id
    ) r ON r.task_id = h.task_id
    WHERE (h.for_streak AND NOT (coalesce(r.ok_before, FALSE)
                                 OR coalesce(r.before, 0) >= $scan_limit))
       OR (h.for_stale AND NOT coalesce(r.has_length, FALSE))
),
-- the history of the tasks that need it: the recent past, and all of it for unsettled tasks
-- (when there are none, DuckDB skips that second scan)
older AS MATERIALIZED (
    SELECT * FROM recent_older
    UNION ALL
    SELECT task_id, origin, session_id, finished_at, result_length,
           status IN ('failed', 'timeout')
    FROM run_outcomes
    WHERE task_id IN (SELECT task_id FROM unsettled)
      AND NOT (finished_at > $horizon::TIMESTAMPTZ AND finished_at <= $now::TIMESTAMPTZ)
),
older_marks AS (
    SELECT task_id,
           max(finished_at) FILTER (WHERE finished_at <= $start::TIMESTAMPTZ AND NOT failing)
               AS last_ok_at,
           max(finished_at) FILTER (WHERE finished_at <= $now::TIMESTAMPTZ
                                      AND result_length IS NOT NULL) AS last_length_at
    FROM older
    GROUP BY task_id
),
-- a streak that reaches back before the window: older outcomes from the newest non-failing one
-- on (ties at its time included, so session_id can order them)
older_tails AS (
    SELECT task_id, newest,
           coalesce(list_position(list_transform(newest, x -> x.failing), false) - 1,
                    len(newest)) AS streak
    FROM (
        SELECT o.task_id,
               list_reverse_sort(list({'at': o.finished_at, 'id': o.session_id,
                                       'failing': o.failing})) AS newest
        FROM older o
        JOIN older_marks m ON m.task_id = o.task_id
        JOIN tails t ON t.task_id = o.task_id AND t.streak = t.n AND t.n < $scan_limit
        WHERE o.finished_at <= $start::TIMESTAMPTZ
          AND (m.last_ok_at IS NULL OR o.finished_at >= m.last_ok_at)
        GROUP BY o.task_id
    )
),
-- stale_task's newest known result length before the window (session_id breaks ties)
older_lengths AS (
    SELECT o.task_id, arg_max(o.result_length, o.session_id) AS last_length
    FROM older o
    JOIN older_marks m ON m.task_id = o.task_id AND o.finished_at = m.last_length_at
    WHERE o.result_length IS NOT NULL
    GROUP BY o.task_id
),
stale AS (
    SELECT e.task_id, w.n, w.latest_at,
           CASE WHEN w.results > 0 THEN w.results
                WHEN l.last_length IS NOT NULL THEN 1 ELSE 0 END AS results,
           CASE WHEN w.results > 0 THEN w.longest
                WHEN m.task_id IS NOT NULL THEN l.last_length
                ELSE length(coalesce(e.last_result_summary, '')) END AS longest,
           coalesce(w.results, 0) = 0 AND m.task_id IS NULL AS from_summary
    FROM eligible e
    LEFT JOIN win w ON w.task_id = e.task_id
    LEFT JOIN older_marks m ON m.task_id = e.task_id
    LEFT JOIN older_lengths l ON l.task_id = e.task_id
),
-- a skill read belongs to its session's outcome in the same file; a file with no outcome in the
-- recent past (steps exported apart from the runs) matches its sessions in the other files
failing_reads AS (
    SELECT s.skill, s.origin AS step_origin, s.step_key, o.origin, o.session_id
    FROM run_steps s
    JOIN in_window o ON o.session_id = s.session_id AND o.failing
    WHERE s.skill IS NOT NULL
      AND s.action = 'tool_call'
      AND (o.origin = s.origin OR s.origin NOT IN (SELECT DISTINCT origin FROM recent))
),
skills AS (
    SELECT skill,
           count(DISTINCT (origin, session_id)) AS failed_sessions,
           count(DISTINCT (step_origin, step_key)) AS reads,
           list(DISTINCT session_id ORDER BY session_id) AS sessions
    FROM failing_reads
    GROUP BY skill
    HAVING count(DISTINCT (origin, session_id)) >= $skill_min_sessions
)
SELECT 'consecutive_failures' AS rule, t.task_id AS subject_id,
       coalesce(r.status, 'active') AS task_status,
       least(t.streak + coalesce(ot.streak, 0), $scan_limit) AS count,
       -- the streak's sessions, newest first
       (list_transform(t.newest[1:t.streak], x -> x.id)
        || coalesce(list_transform(ot.newest[1:ot.streak], x -> x.id), [])
       )[1:$scan_limit] AS sessions,
       t.latest_at, t.n AS in_window,
       NULL::BIGINT AS longest, NULL::BOOLEAN AS from_summary, NULL::BIGINT AS reads
FROM tails t
LEFT JOIN older_tails ot ON ot.task_id = t.task_id
LEFT JOIN run_tasks r ON r.task_id = t.task_id
WHERE least(t.streak + coalesce(ot.streak, 0), $scan_limit) >= $min_streak
UNION ALL
SELECT 'timeout_pattern', t.task_id, coalesce(r.status, 'active'),
       least(t.newest_timeouts, $timeout_limit), NULL, t.latest_at, t.n, NULL, NULL, NULL
FROM tails t
LEFT JOIN run_tasks r ON r.task_id = t.task_id
WHERE t.n >= $timeout_limit AND t.newest_timeouts >= $timeout_limit
UNION ALL
SELECT 'stale_task', task_id, 'active', results, NULL, latest_at, n,
       longest, from_summary, NULL
FROM stale
WHERE longest < $min_result_length
UNION ALL
SELECT 'skill_failure_correlation', skill, NULL, failed_sessions, sessions, NULL, NULL,
       NULL, NULL, reads
FROM skills
ORDER BY rule, subject_id;
