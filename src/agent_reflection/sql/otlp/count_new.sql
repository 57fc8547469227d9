-- How many records of the batch were new.
SELECT count(*) FROM otlp_new
