-- P2: whether ci_runs (`reflect load ci`) exists in this database (older files lack it).
SELECT table_name FROM information_schema.tables
WHERE table_schema = 'main' AND table_name = 'ci_runs'
