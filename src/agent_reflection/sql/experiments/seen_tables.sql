-- Which of the tables the [seen] check reads the database has (an empty database has none).
SELECT table_name
FROM duckdb_tables()
WHERE table_name IN ('labels', 'commits', 'tasks')
