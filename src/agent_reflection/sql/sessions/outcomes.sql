-- Each linked session's outcome in $repo (NULL: every repo) from the history after its commits
-- (docs/loading.md "Session outcomes"). A session's commit is WRONG when, within $window_days
-- days after its committer time, a commit reverts it (commits.reverts_sha, 7-40 hex, a prefix of
-- its sha), or SZZ blames it for a fix's changed lines (fix_inducing, `reflect load git --szz`),
-- or a board task linked to it (task_commits) gets a reopen event ($reopen_kinds); a fix whose
-- message matches $cosmetic_fix (lint, formatting, typing) is not evidence. Evidence by
-- another commit of the same session does not count (the session fixing itself before it ended).
-- Without such evidence the session is CENSORED when the repo's history (as_of: its last commit
-- time) ends less than $window_days after its last linked commit, else RIGHT-SO-FAR.
WITH linked AS (
    SELECT sc.session_id, sc.repo, sc.sha, c.committer_time AS t
    FROM session_commits sc JOIN commits c ON c.repo = sc.repo AND c.sha = sc.sha
    WHERE $repo IS NULL OR sc.repo = $repo
),
as_of AS (
    SELECT repo, max(committer_time) AS as_of FROM commits
    WHERE repo IN (SELECT repo FROM linked) GROUP BY repo
),
szz AS (
    SELECT DISTINCT repo FROM fix_inducing WHERE repo IN (SELECT repo FROM linked)
),
reverted AS (
    SELECT l.session_id, l.repo, l.sha AS commit_sha, 'reverted' AS rule, r.sha AS evidence_sha,
           CAST(NULL AS VARCHAR) AS evidence_task, r.committer_time AS evidence_time
    FROM linked l JOIN commits r
      ON r.repo = l.repo AND r.is_revert AND length(r.reverts_sha) >= 7
     AND starts_with(l.sha, lower(r.reverts_sha))
    WHERE r.committer_time > l.t AND r.committer_time <= l.t + to_days(CAST($window_days AS INTEGER))
),
fixed AS (
    SELECT DISTINCT l.session_id, l.repo, l.sha AS commit_sha, 'szz-fix' AS rule,
           f.fix_sha AS evidence_sha, CAST(NULL AS VARCHAR) AS evidence_task,
           fc.committer_time AS evidence_time
    FROM linked l
    JOIN fix_inducing f ON f.repo = l.repo AND f.introducing_sha = l.sha
    JOIN commits fc ON fc.repo = f.repo AND fc.sha = f.fix_sha
    WHERE fc.committer_time > l.t AND fc.committer_time <= l.t + to_days(CAST($window_days AS INTEGER))
      -- a lint / formatting / type-annotation fix ($cosmetic_fix: P2's cosmetic_lint_message,
      -- NULL = every fix counts) does not say the blamed change was wrong
      AND ($cosmetic_fix IS NULL
           OR NOT regexp_matches(fc.subject || chr(10) || fc.body, '(?i)' || $cosmetic_fix))
),
reopened AS (
    SELECT DISTINCT l.session_id, l.repo, l.sha AS commit_sha, 'reopened-task' AS rule,
           CAST(NULL AS VARCHAR) AS evidence_sha, e.task_ref AS evidence_task, e."at" AS evidence_time
    FROM linked l
    JOIN task_commits tc ON tc.repo = l.repo AND tc.sha = l.sha
    JOIN task_events e ON e.task_ref = tc.task_ref
    WHERE list_contains($reopen_kinds, e.kind)
      AND e."at" > l.t AND e."at" <= l.t + to_days(CAST($window_days AS INTEGER))
),
evidence AS (
    SELECT * FROM (
        SELECT * FROM reverted UNION ALL SELECT * FROM fixed UNION ALL SELECT * FROM reopened
    ) AS ev
    -- a revert or fix that is itself one of the session's commits is the session at work
    WHERE ev.evidence_sha IS NULL OR NOT EXISTS (
        SELECT 1 FROM linked own
        WHERE own.session_id = ev.session_id AND own.repo = ev.repo AND own.sha = ev.evidence_sha
    )
),
first_evidence AS (
    SELECT * FROM evidence
    QUALIFY row_number() OVER (
        PARTITION BY session_id, repo ORDER BY evidence_time, rule, commit_sha, evidence_sha, evidence_task
    ) = 1
),
all_evidence AS (
    SELECT session_id, repo,
           to_json(list({'commit': commit_sha, 'rule': rule, 'by': evidence_sha,
                         'task': evidence_task, 'at': strftime(evidence_time AT TIME ZONE 'UTC', '%Y-%m-%dT%H:%M:%SZ')}
                        ORDER BY evidence_time, rule, commit_sha)) AS evidence
    FROM evidence GROUP BY session_id, repo
),
sessions AS (
    SELECT session_id, repo, count(*) AS n_commits, max(t) AS last_commit_time
    FROM linked GROUP BY session_id, repo
)
SELECT s.session_id, s.repo,
       CASE WHEN fe.session_id IS NOT NULL THEN 'wrong'
            WHEN a.as_of < s.last_commit_time + to_days(CAST($window_days AS INTEGER)) THEN 'censored'
            ELSE 'right-so-far' END AS outcome,
       CASE WHEN fe.session_id IS NOT NULL THEN fe.rule
            WHEN a.as_of < s.last_commit_time + to_days(CAST($window_days AS INTEGER)) THEN 'short-follow-up'
            ELSE 'none' END AS rule,
       fe.commit_sha, fe.evidence_sha, fe.evidence_task, fe.evidence_time,
       coalesce(ae.evidence, to_json([])) AS evidence,
       CAST(s.n_commits AS INTEGER) AS n_commits, s.last_commit_time, a.as_of,
       CAST($window_days AS INTEGER) AS window_days,
       $cosmetic_fix IS NOT NULL AS ignore_cosmetic_fixes,
       s.repo IN (SELECT repo FROM szz) AS szz_loaded
FROM sessions s
JOIN as_of a ON a.repo = s.repo
LEFT JOIN first_evidence fe ON fe.session_id = s.session_id AND fe.repo = s.repo
LEFT JOIN all_evidence ae ON ae.session_id = s.session_id AND ae.repo = s.repo
ORDER BY s.repo, s.session_id
