-- Labelled calibration corpora for P1: one row per {confidence, correct} record.
-- record_key = SHA-256 of the record's canonical JSON + '#' + its occurrence number in the file,
-- so loading a file twice changes nothing while identical records in one file are all kept.
-- (corpus, record_key) is unique by the loader (it skips keys the corpus holds; the database
-- admits one writing process), not by a PRIMARY KEY: maintaining that index cost about 8 s of
-- a 1,000,000-row load, four times the rest of the insert. Databases made before keep theirs.
CREATE TABLE IF NOT EXISTS labels (
    corpus      VARCHAR NOT NULL,   -- the file's stem, or --corpus NAME
    record_key  VARCHAR NOT NULL,
    confidence  DOUBLE NOT NULL,    -- [0, 1]
    correct     BOOLEAN NOT NULL,
    groups      JSON NOT NULL,      -- optional group columns, e.g. {"model": "..."}
    source_file VARCHAR NOT NULL,
    line        INTEGER NOT NULL,   -- 1-based line (JSONL) or data row (CSV)
    load_id     BIGINT NOT NULL
);
