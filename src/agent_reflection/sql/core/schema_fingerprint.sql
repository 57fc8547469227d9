-- A fingerprint of this database's tables (each one's CREATE statement as DuckDB keeps it, so
-- with its current columns) and sequences: changes when a table or column is dropped, added or
-- retyped, so db.connect runs the schema DDL again. (duckdb_columns() costs 5x more.)
SELECT xor(
    coalesce((
        SELECT bit_xor(hash(sql)) FROM duckdb_tables()
        WHERE database_name = current_database() AND NOT temporary
    ), 0::UBIGINT),
    coalesce((
        SELECT bit_xor(hash('sequence', sequence_name)) FROM duckdb_sequences()
        WHERE database_name = current_database() AND NOT temporary
    ), 0::UBIGINT)
)
