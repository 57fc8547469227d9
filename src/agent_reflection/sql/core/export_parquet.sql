-- Write one table ({{table}}, quoted) to the Parquet file $path.
COPY (SELECT * FROM {{table}}) TO $path (FORMAT parquet)
