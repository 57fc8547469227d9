-- `reflect status`, P1 on loop labels: sessions by derived outcome (wrong | right-so-far |
-- censored).
SELECT outcome, count(*) FROM session_outcomes GROUP BY outcome ORDER BY outcome
