-- Labels among the pre-registration's [seen] label_keys markers, per corpus ($corpus NULL =
-- every corpus, as P1 reads them): (what, name, markers present, one of them). A record's
-- marker is the SHA-256 of its key: the values of P1's declared cluster and strata columns
-- ($key_columns, e.g. question_id and model), joined by U+001F; so the same question answered
-- by the same model is found with fields added, dropped or reordered. Read by
-- experiments/registration.py (seen_label_markers makes the [seen] markers with it).
WITH keyed AS (
    SELECT corpus,
           sha256(array_to_string(list_transform($key_columns::VARCHAR[],
                                                 c -> coalesce(groups ->> c, '')), chr(31))) AS marker
    FROM labels
    WHERE ($corpus IS NULL OR corpus = $corpus)
      -- a record with none of the key columns has no key: it marks nothing
      AND len(list_filter($key_columns::VARCHAR[], c -> (groups ->> c) IS NOT NULL)) > 0
)
SELECT 'label corpus' AS what, corpus AS name, count(DISTINCT marker) AS present,
       min(marker) AS example
FROM keyed
WHERE list_contains($markers::VARCHAR[], marker)
GROUP BY corpus
ORDER BY corpus
