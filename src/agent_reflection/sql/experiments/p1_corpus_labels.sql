-- P1 labels from a labelled corpus; $corpus NULL = every corpus. group_text: the value of each
-- group key in $text_keys (in that order) as text; group_json: of each key in $json_keys as
-- JSON; NULL where a row lacks the key.
SELECT corpus, confidence, correct, groups ->> $text_keys AS group_text,
    groups -> $json_keys AS group_json
FROM labels
WHERE $corpus IS NULL OR corpus = $corpus
ORDER BY corpus, line, record_key
