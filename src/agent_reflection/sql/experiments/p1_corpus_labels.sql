-- P1 labels from a labelled corpus; $corpus NULL = every corpus.
SELECT corpus, confidence, correct, CAST(groups AS VARCHAR) AS groups
FROM labels
WHERE $corpus IS NULL OR corpus = $corpus
ORDER BY corpus, line, record_key
