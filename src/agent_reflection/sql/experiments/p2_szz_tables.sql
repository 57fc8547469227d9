-- P2: which of the SZZ tables (`reflect load git --szz`) exist in this database.
SELECT table_name FROM information_schema.tables
WHERE table_schema = 'main' AND table_name IN ('fix_inducing', 'fix_changes')
ORDER BY table_name
