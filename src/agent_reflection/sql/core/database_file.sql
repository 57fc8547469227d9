-- The file of the connection's database (its name when in memory): keys the loads open in a
-- process, which may have several database files open (db.mark_interrupted).
SELECT coalesce(path, database_name) FROM duckdb_databases() WHERE database_name = current_database()
