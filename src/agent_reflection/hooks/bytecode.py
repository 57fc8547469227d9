"""The package's bytecode, written when the hooks are installed.

Python compiles a module from source on every import when no bytecode lies beside it and it may
not write one: ``PYTHONDONTWRITEBYTECODE`` is set (common in containers and CI images). An
editable install (``pip install -e .``, README command 1) writes no bytecode, so there each hook
call compiled every module it imports: the in-loop hook took 39.8 ms a call instead of 24.1 ms
(medians of 30 calls; a bare Python start 11.3 ms). ``reflect hook install`` writes it once.
Python reads bytecode whatever that variable says, and compiles again in memory (correctly,
only slower) a module whose source changed after its bytecode was written.
"""

from __future__ import annotations

import compileall
from pathlib import Path

import agent_reflection

#: The installed package's folder (a checkout's ``src/agent_reflection`` when editable).
PACKAGE_DIR = Path(agent_reflection.__file__).resolve().parent


def compile_package(folder: Path = PACKAGE_DIR) -> bool:
    """Write the bytecode of every module under ``folder`` that lacks current bytecode;
    whether all of it could be written (False: e.g. a read-only install)."""
    try:
        return bool(compileall.compile_dir(folder, quiet=2))
    except OSError:
        return False


def not_compiled_hint(folder: Path = PACKAGE_DIR) -> str:
    """What to say when :func:`compile_package` could not write the bytecode."""
    return (
        f"note: could not write the bytecode of {folder} (read-only?): each hook call compiles "
        f"its modules first when PYTHONDONTWRITEBYTECODE is set (about 15 ms a call). Fix: run "
        f"`python -m compileall -q {folder}` as the folder's owner"
    )
