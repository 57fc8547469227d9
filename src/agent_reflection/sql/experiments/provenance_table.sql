-- Rows and an order-independent content hash of one table ($table, from a fixed allow-list):
-- the sum of DuckDB's hash() of every row without its load_id, modulo 2^64. Loading the same
-- records again (an idempotent load) leaves it unchanged; any changed, added or removed row
-- changes it.
SELECT count(*) AS n_rows,
       coalesce(sum(hash(r)) % 18446744073709551616, 0)::UBIGINT AS content_hash
FROM (SELECT COLUMNS(c -> c <> 'load_id') FROM query_table($table)) AS r
