-- A load's counts so far: written with each committed batch, so an interrupted load still says
-- how far it got (the counts of a crashed load match what it committed).
UPDATE loads
SET rows_read = $read, rows_loaded = $loaded, rows_rejected = $rejected,
    rows_already_present = $already_present
WHERE load_id = $load_id
