-- Every row of platform table {{table}} (one of load.runs.sqlite.TABLES), in rowid order.
SELECT rowid AS _rowid, * FROM {{table}} ORDER BY rowid
