"""Where the database file is (:mod:`agent_reflection.store.db` re-exports it)."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["DB_ENV", "DEFAULT_DB_PATH", "resolve_db_path"]

DEFAULT_DB_PATH = Path("data/reflection.duckdb")
#: Environment variable that overrides the default database file (``--db`` overrides both).
DB_ENV = "REFLECT_DB"


def resolve_db_path(path: str | os.PathLike[str] | None = None) -> Path:
    """``path``, else ``$REFLECT_DB``, else ``data/reflection.duckdb``."""
    if path is not None:
        return Path(path)
    env = os.environ.get(DB_ENV)
    return Path(env) if env else DEFAULT_DB_PATH
