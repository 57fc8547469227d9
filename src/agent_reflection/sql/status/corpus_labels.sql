-- `reflect status`, P1 on corpus labels: rows, corpora, and the correct and incorrect rows of
-- the self-rated-high subset (confidence >= $threshold), which decide P1's minimum sample.
SELECT count(*) AS rows,
    count(DISTINCT corpus) AS corpora,
    count(*) FILTER (WHERE confidence >= $threshold AND correct) AS high_correct,
    count(*) FILTER (WHERE confidence >= $threshold AND NOT correct) AS high_incorrect
FROM labels
