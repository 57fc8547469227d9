-- Rows of one table; {{table}} is a table name the caller took from the database (quoted).
SELECT count(*) FROM {{table}}
