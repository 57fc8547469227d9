-- Fixes of one repo already attributed: every attributed fix has at least one fix_inducing
-- row (a candidate, or a row whose method says why there is none).
SELECT DISTINCT fix_sha FROM fix_inducing WHERE repo = ?
