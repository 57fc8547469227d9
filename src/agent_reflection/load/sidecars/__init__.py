"""reflection.v1 sidecar files into ``reflections``: ``files`` (which paths), ``rows`` (one file,
one row or a reason, DuckDB-free for worker processes), ``loader`` (the load). Nothing is
imported here."""
