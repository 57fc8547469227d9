-- Before storing a batch of rejects ($reject_batch, registered by db.LoadRun.flush_rejects):
-- drop the rows of EARLIER loads with the same (source, location, reason). A record rejected
-- again when the same inputs are re-loaded then appears once, under the latest load that
-- rejected it, instead of once per load. Copies within one load are all kept.
DELETE FROM rejected AS r
USING (SELECT DISTINCT load_id, source, location, reason FROM reject_batch) AS b
WHERE r.source = b.source AND r.location = b.location AND r.reason = b.reason
  AND r.load_id <> b.load_id;
