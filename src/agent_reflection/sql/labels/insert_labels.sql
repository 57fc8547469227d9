-- One load's valid labels, from the Arrow table `label_batch` the loader registers
-- (canonical, confidence, correct, groups, line); the constant columns are bound.
-- A row's record_key is the SHA-256 of its canonical JSON + '#' + its occurrence among the
-- file's identical records (in line order); keys the corpus already holds are skipped, so
-- a re-load adds nothing. Returns the count of rows inserted.
INSERT INTO labels (corpus, record_key, confidence, correct, groups, source_file, line, load_id)
SELECT $corpus, keyed.record_key, keyed.confidence, keyed.correct, keyed.groups, $source_file,
    keyed.line, $load_id
FROM (
    SELECT digest || '#' || row_number() OVER (PARTITION BY digest ORDER BY line) AS record_key,
        confidence, correct, groups, line
    FROM (SELECT sha256(canonical) AS digest, confidence, correct, groups, line FROM label_batch)
) AS keyed
ANTI JOIN (SELECT record_key FROM labels WHERE corpus = $corpus) AS held
    ON held.record_key = keyed.record_key
ORDER BY keyed.line
