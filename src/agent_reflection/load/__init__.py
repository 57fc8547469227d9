"""Loaders: one module per source (sidecars, git histories, boards), each into DuckDB."""
