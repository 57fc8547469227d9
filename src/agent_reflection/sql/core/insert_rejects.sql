-- A batch of rejects, after replace_rejects.sql dropped earlier loads' copies of them.
INSERT INTO rejected (load_id, source, location, raw, reason, rejected_at)
SELECT load_id, source, location, raw, reason, rejected_at FROM reject_batch
