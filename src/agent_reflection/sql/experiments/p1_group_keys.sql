-- The group keys of the P1 labels, in name order; $corpus NULL = every corpus.
SELECT DISTINCT unnest(json_keys(groups)) AS key
FROM labels
WHERE $corpus IS NULL OR corpus = $corpus
ORDER BY key
