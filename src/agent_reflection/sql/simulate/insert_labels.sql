-- Simulated calibration records for P1, one per row.
INSERT INTO labels (corpus, record_key, confidence, correct, groups, source_file, line, load_id)
VALUES ($corpus, $record_key, $confidence, $correct, $groups, $source_file, $line, $load_id)
