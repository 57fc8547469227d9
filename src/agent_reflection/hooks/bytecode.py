"""The package's bytecode, written when the hooks are installed and when the demo starts.

Python compiles a module from source on every import when no bytecode lies beside it and it may
not write one: ``PYTHONDONTWRITEBYTECODE`` is set (common in containers and CI images). An
editable install (``pip install -e .``, README command 1) writes no bytecode, so there each hook
call compiled every module it imports: the in-loop hook took 39.4 ms a call instead of 23.4 ms,
the Stop hook about 62 ms instead of 37 (a bare Python start 11 ms; bench/README.md).
``reflect hook install`` writes it once. Python reads bytecode whatever that variable says, and
compiles again in memory (correctly, only slower) a module whose source changed after its
bytecode was written: after updating an editable checkout, install again.
"""

from __future__ import annotations

import compileall
import os
import py_compile
import shlex
import sys
from pathlib import Path

import agent_reflection

#: The installed package's folder (a checkout's ``src/agent_reflection`` when editable).
PACKAGE_DIR = Path(agent_reflection.__file__).resolve().parent


def compile_package(folder: Path = PACKAGE_DIR) -> bool:
    """Write the bytecode of every module under ``folder`` that lacks current bytecode;
    whether all of it could be written (False: a read-only install, a module that does not
    compile). Timestamp bytecode, whatever ``SOURCE_DATE_EPOCH`` says: compileall takes any
    other kind for stale and would write it again at every call."""
    try:
        return bool(
            compileall.compile_dir(
                folder, quiet=2, invalidation_mode=py_compile.PycInvalidationMode.TIMESTAMP
            )
        )
    except OSError:
        return False


def not_compiled_hint(folder: Path = PACKAGE_DIR) -> str:
    """What to say when :func:`compile_package` could not write all of the bytecode."""
    writable = os.access(folder, os.W_OK)
    why = "a module did not compile; the command names it" if writable else "not writable"
    command = f"{shlex.quote(sys.executable)} -m compileall -q {shlex.quote(str(folder))}"
    return (
        f"note: could not write all of the bytecode of {folder} ({why}): where "
        f"PYTHONDONTWRITEBYTECODE is set, each hook call then compiles its modules first "
        f"(16-25 ms a call). Fix: run `{command}` as the folder's owner"
    )
