-- The [seen] label_keys markers of one corpus: the SHA-256 of each record's key (the values of
-- $key_columns joined by U+001F, as seen_labels.sql computes them) that start with '00' (a
-- 1-in-256 sample), distinct and sorted. Read by experiments/registration.py.
SELECT DISTINCT marker
FROM (
    SELECT sha256(array_to_string(list_transform($key_columns::VARCHAR[],
                                                 c -> coalesce(groups ->> c, '')), chr(31))) AS marker
    FROM labels
    WHERE corpus = $corpus
      AND len(list_filter($key_columns::VARCHAR[], c -> (groups ->> c) IS NOT NULL)) > 0
)
WHERE starts_with(marker, '00')
ORDER BY marker
