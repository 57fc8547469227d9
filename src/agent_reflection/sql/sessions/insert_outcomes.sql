-- The outcomes derived by sessions/outcomes.sql (registered as `outcome_batch`) into the table.
INSERT INTO session_outcomes BY NAME
SELECT *, $load_id AS load_id FROM outcome_batch
