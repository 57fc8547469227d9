-- The corpora of the labels table and their rows, by name (the names `-p corpus` accepts).
SELECT corpus, count(*) AS n FROM labels GROUP BY corpus ORDER BY corpus
