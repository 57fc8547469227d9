-- Tier 1: the four rules in one statement, one row per finding candidate (rule, subject_id, ...).
-- It reads run_outcomes once over the recent past ($horizon, $now], which holds the window
-- ($start, $now] and, nearly always, every older outcome a rule needs; a second read, of the rest
-- of the history, happens only for tasks that recent past does not settle. Per-task work starts with cheap counts and maxima; rows are put in
-- order only for the tasks a rule can still fire on. (One statement and no temporary tables:
-- copying the window into a table, or sorting structs, cost more here than the scans.)
--
-- Outcome order is newest first by finished_at, then session_id. Failing = failed or timeout.
-- A session is (task_id, session_id): several files that report the same session of a task (a
-- run log and its trajectory; two exports of one platform) are one outcome here, at the newest
-- of their times up to the clock, failing only if every one of them says failed or timeout
-- (timeout only if all say timeout), with the longest result length. Two files that reuse a
-- session id for different tasks stay two sessions. Counting a session once, and letting any
-- file that says it did not fail win, can shorten a failure streak but never lengthen one: no
-- pause comes from a session counted twice or from one file's verdict against another's.
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
--   rows, for comparison with the peer's row count). A sub-session is (task_id, session_id), as
--   above; a step belongs to it when its file reports the session. Steps exported in a file with
--   no outcome in the recent past (a steps-only export) match the session in the other files.
--
-- Rows: the findings, in rule order (consecutive_failures, timeout_pattern, stale_task,
-- skill_failure_correlation) and by subject, each with its texts. A paused task makes no
-- finding; a task consecutive_failures pauses makes no timeout_pattern or stale_task finding.
-- $scope_tasks / $scope_sessions (NULL: everything) restrict the task rules to some tasks and
-- skill_failure_correlation to skills one of the sessions read. With $every_candidate, every
-- candidate comes back (failure streaks of 0 and paused tasks too, when $min_streak is 0), the
-- last column (is_finding) telling the findings: the same as without it, as a streak makes a
-- finding (and pauses its task) only from $failure_limit on whatever $min_streak lets through.
-- Timestamps in the texts are ISO 8601 in UTC.
--
-- Only files in run_overlapping_origins (kept by the loaders: files that share a session id with
-- another file) can hold such a session: their rows are grouped, every other row is one session
-- as it is (grouping every row cost 1.3x to 2x the whole pass). origin is the row's file, NULL
-- for a grouped session; origins lists a grouped session's files.
WITH recent AS MATERIALIZED (
    SELECT task_id, session_id, finished_at, result_length,
           status IN ('failed', 'timeout') AS failing,
           status = 'timeout' AS timeout,
           origin, NULL::VARCHAR[] AS origins
    FROM run_outcomes
    WHERE finished_at > $horizon::TIMESTAMPTZ
      AND finished_at <= $now::TIMESTAMPTZ
      AND origin NOT IN (SELECT origin FROM run_overlapping_origins)
    UNION ALL
    SELECT task_id, session_id,
           max(finished_at),
           max(result_length),
           bool_and(status IN ('failed', 'timeout')),
           bool_and(status = 'timeout'),
           NULL, list(origin)
    FROM run_outcomes
    WHERE finished_at > $horizon::TIMESTAMPTZ
      AND finished_at <= $now::TIMESTAMPTZ
      AND origin IN (SELECT origin FROM run_overlapping_origins)
    GROUP BY task_id, session_id
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
           max(result_length) AS longest,
           -- where a streak (a timeout tail) can start: after the newest non-failing
           -- (non-timeout) outcome; NULL when there is none in the window
           max(finished_at) FILTER (WHERE NOT failing) AS last_ok_at,
           max(finished_at) FILTER (WHERE NOT timeout) AS last_other_at
    FROM in_window
    WHERE task_id IS NOT NULL
    GROUP BY task_id
),
-- tasks a streak or a timeout tail is possible for, and from when their window outcomes must be
-- put in order: the streak and the timeout tail both end at (and include) the newest outcome
-- that is not one, so only outcomes from the earlier of those two times on are sorted (all of
-- them when either is missing). Ties at that time are kept, so session_id can order them.
tail_from AS (
    SELECT task_id, n, latest_at,
           CASE WHEN last_ok_at IS NULL OR last_other_at IS NULL THEN '-infinity'::TIMESTAMPTZ
                ELSE least(last_ok_at, last_other_at) END AS since
    FROM win
    WHERE failing >= $min_streak
       OR failing = n
       OR (n >= $timeout_limit AND timeouts >= $timeout_limit)
),
-- newest first, a sorted list of {at, id, ...} per task (a struct compares field by field)
tails AS (
    SELECT task_id, n, latest_at, newest,
           coalesce(list_position(list_transform(newest, x -> x.failing), false) - 1, n)
               AS streak,
           coalesce(list_position(list_transform(newest, x -> x.timeout), false) - 1, n)
               AS newest_timeouts
    FROM (
        SELECT o.task_id,
               any_value(f.n) AS n,
               any_value(f.latest_at) AS latest_at,
               list_reverse_sort(list({'at': o.finished_at, 'id': o.session_id,
                                       'failing': o.failing, 'timeout': o.timeout})) AS newest
        FROM in_window o
        JOIN tail_from f ON f.task_id = o.task_id AND o.finished_at >= f.since
        -- a cheap bound first: most outcomes are older than every task's tail
        WHERE o.finished_at >= (SELECT min(since) FROM tail_from)
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
    SELECT task_id, session_id, finished_at, result_length, failing
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
-- (when there are none, DuckDB skips that second scan), one row per session again (its files'
-- rows may lie on both sides of $horizon). Rows after the clock are kept apart: they only tell
-- stale_task that the task has outcomes, none of them yet.
older AS MATERIALIZED (
    SELECT task_id, session_id,
           max(finished_at) AS finished_at,
           max(result_length) AS result_length,
           bool_and(failing) AS failing
    FROM (
        SELECT * FROM recent_older
        UNION ALL
        SELECT task_id, session_id, finished_at, result_length,
               status IN ('failed', 'timeout')
        FROM run_outcomes
        WHERE task_id IN (SELECT task_id FROM unsettled)
          AND NOT (finished_at > $horizon::TIMESTAMPTZ AND finished_at <= $now::TIMESTAMPTZ)
    )
    GROUP BY task_id, session_id, finished_at > $now::TIMESTAMPTZ
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
    SELECT s.skill, s.origin AS step_origin, s.step_key, o.task_id, o.session_id
    FROM run_steps s
    JOIN in_window o ON o.session_id = s.session_id AND o.failing
    WHERE s.skill IS NOT NULL
      AND s.action = 'tool_call'
      AND (o.origin = s.origin
           OR list_contains(o.origins, s.origin)
           -- read from the table, not the materialised recent past: the scan groups the
           -- file names in their compressed form
           OR s.origin NOT IN (SELECT DISTINCT origin FROM run_outcomes
                               WHERE finished_at > $horizon::TIMESTAMPTZ
                                 AND finished_at <= $now::TIMESTAMPTZ))
),
-- distinct counts in two steps (DISTINCT over a struct per skill cost more): the failed
-- sub-sessions per skill, then the skills with enough of them, then their distinct reads (a step
-- is one row of run_steps, (origin, step_key); it repeats here only when matched across files)
skill_sessions AS (
    SELECT skill, task_id, session_id
    FROM failing_reads
    GROUP BY skill, task_id, session_id
),
flagged AS (
    SELECT skill, count(*) AS failed_sessions,
           list(DISTINCT session_id ORDER BY session_id) AS sessions
    FROM skill_sessions
    GROUP BY skill
    HAVING count(*) >= $skill_min_sessions
),
skills AS (
    SELECT f.skill, f.failed_sessions, r.reads, f.sessions
    FROM flagged f
    JOIN (
        SELECT skill, count(*) AS reads
        FROM (SELECT DISTINCT skill, step_origin, step_key FROM failing_reads)
        GROUP BY skill
    ) r ON r.skill = f.skill
),
candidates AS (
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
),
-- each candidate as the finding it makes: the status of its task, the caller's scope and the
-- rule order decide whether it is one (a task paused by consecutive_failures gets no
-- timeout_pattern or stale_task warning); the texts are built here, all rows at once
paused AS (
    SELECT subject_id
    FROM candidates
    WHERE rule = 'consecutive_failures'
      AND count >= $failure_limit
      AND task_status = 'active'
      AND ($scope_tasks::VARCHAR[] IS NULL OR list_contains($scope_tasks::VARCHAR[], subject_id))
),
judged AS (
    SELECT c.*,
           CASE c.rule
               WHEN 'skill_failure_correlation' THEN
                   $scope_sessions::VARCHAR[] IS NULL
                   OR len(list_intersect(c.sessions, $scope_sessions::VARCHAR[])) > 0
               ELSE coalesce(c.task_status = 'active', FALSE)
                    AND ($scope_tasks::VARCHAR[] IS NULL
                         OR list_contains($scope_tasks::VARCHAR[], c.subject_id))
                    AND CASE c.rule WHEN 'consecutive_failures' THEN c.count >= $failure_limit
                                    ELSE c.subject_id NOT IN (SELECT subject_id FROM paused) END
           END AS is_finding,
           CASE c.rule WHEN 'consecutive_failures' THEN 1 WHEN 'timeout_pattern' THEN 2
                       WHEN 'stale_task' THEN 3 ELSE 4 END AS rule_order,
           -- latest_at as Python's isoformat() of a UTC datetime
           strftime(timezone('UTC', c.latest_at), '%Y-%m-%dT%H:%M:%S')
               || CASE WHEN epoch_us(c.latest_at) % 1000000 = 0 THEN ''
                       ELSE '.' || lpad(CAST((epoch_us(c.latest_at) % 1000000 + 1000000)
                                             % 1000000 AS VARCHAR), 6, '0') END
               || '+00:00' AS latest_text,
           array_to_string(coalesce(c.sessions, []), ', ') AS sessions_text,
           CAST(c.count AS VARCHAR) AS count_text
    FROM candidates c
)
SELECT rule,
       CASE rule WHEN 'consecutive_failures' THEN 'action_taken' ELSE 'warning' END AS severity,
       CASE rule WHEN 'skill_failure_correlation' THEN 'skill' ELSE 'task' END AS subject_type,
       subject_id,
       CASE rule
           WHEN 'consecutive_failures' THEN
               'last ' || count_text || ' outcomes failed or timed out (limit '
               || CAST($failure_limit AS VARCHAR) || '; newest at '
               || coalesce(latest_text, '?') || '): ' || sessions_text || '; pause the task'
           WHEN 'timeout_pattern' THEN
               'newest ' || count_text || ' of its ' || CAST(in_window AS VARCHAR)
               || ' outcomes in the window (' || $window_text
               || ') timed out: give it a longer timeout or a simpler prompt'
           WHEN 'stale_task' THEN
               'active task without meaningful output: '
               || CASE WHEN from_summary
                       THEN 'its last_result_summary is ' || CAST(longest AS VARCHAR)
                            || ' characters'
                       ELSE 'all ' || count_text || ' recent results (window ' || $window_text
                            || ', at least the last) are shorter than '
                            || CAST($min_result_length AS VARCHAR)
                            || ' characters (longest ' || CAST(longest AS VARCHAR) || ')' END
           ELSE
               'read in ' || count_text || ' failed or timed-out sub-sessions ('
               || CAST(reads AS VARCHAR) || ' reads) in the last ' || $lookback_text || ' s: '
               || array_to_string(sessions[1:5], ', ')
               || CASE WHEN len(sessions) > 5 THEN ' ...' ELSE '' END
       END AS detail,
       CASE rule WHEN 'consecutive_failures' THEN 'paused_task'
                 WHEN 'skill_failure_correlation' THEN 'flagged_skill' ELSE '' END
           AS action_taken,
       count,
       CASE rule
           WHEN 'consecutive_failures' THEN 'streak ' || count_text || ': ' || sessions_text
           WHEN 'timeout_pattern' THEN
               'newest ' || count_text || ' timed out, newest at ' || coalesce(latest_text, '-')
           WHEN 'stale_task' THEN
               CASE WHEN from_summary
                    THEN 'last_result_summary ' || CAST(longest AS VARCHAR) || ' characters'
                    ELSE 'newest result at ' || coalesce(latest_text, '-') || ', longest '
                         || CAST(longest AS VARCHAR) END
           ELSE 'failed sub-sessions: ' || sessions_text
       END AS evidence,
       is_finding
FROM judged
WHERE is_finding OR $every_candidate
ORDER BY rule_order, subject_id;
