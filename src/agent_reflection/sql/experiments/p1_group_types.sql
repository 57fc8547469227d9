-- The distinct combinations of JSON types (json_type names, NULL where a row lacks the key)
-- of the group keys $keys over the P1 labels; $corpus NULL = every corpus.
SELECT DISTINCT json_type(groups, $keys) AS types
FROM labels
WHERE $corpus IS NULL OR corpus = $corpus
