"""Loaders: one module per source, each filling DuckDB tables with the loads/rejected bookkeeping."""
