-- Commits of one repo already read: every attributed fix has at least one fix_inducing row (a
-- candidate, or a row whose method says why there is none); a diff-only revert has its
-- fix_changes rows.
SELECT fix_sha FROM fix_inducing WHERE repo = ?
UNION
SELECT fix_sha FROM fix_changes WHERE repo = ?
