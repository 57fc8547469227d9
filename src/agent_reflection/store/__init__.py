"""The DuckDB file and what sits around it: where it is, connections and schema (``db``), the
``rejected`` table, and the Parquet export. Nothing is imported here."""
