"""Loaders that fill the DuckDB file: sidecars, git histories, board exports, task matching."""
