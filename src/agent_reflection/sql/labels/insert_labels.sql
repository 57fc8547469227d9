-- One load's new labels, from the Arrow table `label_batch` the loader registers
-- (record_key, confidence, correct, groups, line); the constant columns are bound.
INSERT INTO labels (corpus, record_key, confidence, correct, groups, source_file, line, load_id)
SELECT $corpus, record_key, confidence, correct, groups, $source_file, line, $load_id
FROM label_batch
