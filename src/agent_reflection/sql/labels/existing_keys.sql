-- The record keys a corpus already holds (a re-load skips them).
SELECT record_key FROM labels WHERE corpus = $corpus
