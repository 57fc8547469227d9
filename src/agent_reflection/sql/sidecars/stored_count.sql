-- How many reflections are stored already: the bulk load's memory limit leaves room for their
-- primary-key index.
SELECT count(*) FROM reflections
