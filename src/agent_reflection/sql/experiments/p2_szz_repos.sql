-- P2: repos whose fixes were attributed by SZZ (`reflect load git --szz`); every attributed fix
-- has a row, with or without a candidate.
SELECT DISTINCT repo FROM fix_inducing ORDER BY repo
