-- On a platform SQLite file: the column names of table ? (a write fills only columns it has).
SELECT name FROM pragma_table_info(?)
