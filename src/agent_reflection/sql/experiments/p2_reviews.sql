-- P2: review evidence of each commit a pull request names (task_commits of a loaded board):
-- the PR's review events ('reviewed', from a GitHub timeline) and comments. Only PRs whose
-- events came from a timeline or issue-events response count as having review data: a PR
-- known only from its own record says nothing about whether it was reviewed.
SELECT tc.repo,
       tc.sha,
       count(e.kind) FILTER (WHERE e.kind = 'reviewed') AS reviews,
       count(e.kind) FILTER (WHERE e.kind = 'commented') AS comments,
       min(t.task_ref) AS pull_request
FROM task_commits AS tc
JOIN tasks AS t ON t.task_ref = tc.task_ref AND t.category = 'pull_request'
JOIN task_events AS e ON e.task_ref = t.task_ref AND e.via IN ('timeline', 'events')
GROUP BY tc.repo, tc.sha
