-- Labels among the pre-registration's [seen] label_record_keys markers, per corpus ($corpus
-- NULL = every corpus, as P1 reads them): (what, name, markers present, one of them).
SELECT 'label corpus' AS what, corpus AS name, count(DISTINCT record_key) AS present,
       min(record_key) AS example
FROM labels
WHERE list_contains($markers::VARCHAR[], record_key)
  AND ($corpus IS NULL OR corpus = $corpus)
GROUP BY corpus
ORDER BY corpus
