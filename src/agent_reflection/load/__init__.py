"""Loaders: read external records into the DuckDB tables of ``sql/schema/``."""
