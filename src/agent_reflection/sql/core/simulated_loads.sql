-- The loads that wrote simulated data (`reflect demo`'s worlds, store.db.record_simulated):
-- a database holding any is SIMULATED in every report made from it.
SELECT load_id, origin FROM loads WHERE source = 'simulated' ORDER BY load_id
