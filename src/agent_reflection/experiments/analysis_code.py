"""The code that computes a verdict, hashed file by file: what the lock registers beside the
pre-registration file, and what a run compares with it.

A verdict is computed by the experiment notebooks a run executes and by the library code they
call: the experiments (``experiments/``), the statistics (``stats/``) and the experiments' SQL
(``sql/experiments/``). :func:`package_code` and :func:`notebook_code` hash each of those files
(SHA-256 of its bytes) under a path that does not depend on where it is installed
(``agent_reflection/stats/auc.py``, ``notebooks/p1_calibration.py``), so a checkout, a wheel and
a copy give the same names. :func:`code_differences` names what a run executed that the lock
does not register: a notebook taken from ``./notebooks/`` or ``$REFLECT_NOTEBOOKS`` with one
added line, an edited statistics module.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import agent_reflection
from agent_reflection.errors import ReflectionError

#: Each experiment's notebook, and the summary notebook a run executes after them.
EXPERIMENTS = {
    "p1": "p1_calibration.py",
    "p2": "p2_git_history.py",
    "p3": "p3_detectability.py",
}
SUMMARY_NOTEBOOK = "phase0_summary.py"

#: The package folders whose files compute verdicts, relative to the package.
PACKAGE_PARTS = ("experiments", "stats", "sql/experiments")
#: File kinds hashed in them.
CODE_SUFFIXES = (".py", ".sql")
PACKAGE_PREFIX = "agent_reflection/"
NOTEBOOK_PREFIX = "notebooks/"
#: Files named at most in one reason.
NAMED = 8


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def package_code(package: Path | None = None) -> dict[str, str]:
    """``{"agent_reflection/<path>": sha256}`` of every file of :data:`PACKAGE_PARTS` in
    ``package`` (default: the package this process imports, which the notebooks' kernels
    import too)."""
    root = package if package is not None else Path(agent_reflection.__file__).resolve().parent
    code: dict[str, str] = {}
    for part in PACKAGE_PARTS:
        for path in sorted((root / part).rglob("*")):
            if path.suffix in CODE_SUFFIXES and path.is_file() and "__pycache__" not in path.parts:
                code[PACKAGE_PREFIX + path.relative_to(root).as_posix()] = _sha256(path)
    return code


def notebook_code(paths: Iterable[Path]) -> dict[str, str]:
    """``{"notebooks/<name>": sha256}`` of each notebook file (by its name, wherever it lies)."""
    return {NOTEBOOK_PREFIX + p.name: _sha256(p) for p in paths}


def code_sha256(code: Mapping[str, str]) -> str:
    """One SHA-256 of a set of hashed files: of the lines ``<path> <sha256>``, sorted."""
    text = "".join(f"{path} {code[path]}\n" for path in sorted(code))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def code_differences(
    registered: Mapping[str, str], executed: Mapping[str, str], *, notebooks_from: str = ""
) -> tuple[str, ...]:
    """What in ``executed`` differs from ``registered``, one phrase per kind (empty: the same).

    Every registered package file counts; of the registered notebooks, only those the run
    executed (a P3 run does not execute P1's notebook). ``notebooks_from`` says where the
    executed notebooks were taken from, for the phrase about them.
    """
    relevant = {
        path for path in registered if path.startswith(PACKAGE_PREFIX) or (path in executed)
    }
    changed = sorted(p for p in relevant & set(executed) if registered[p] != executed[p])
    added = sorted(set(executed) - set(registered))
    missing = sorted(relevant - set(executed))
    phrases = []
    for what, paths in (("changed", changed), ("not registered", added), ("missing", missing)):
        if paths:
            listed = ", ".join(paths[:NAMED])
            more = f" and {len(paths) - NAMED} more" if len(paths) > NAMED else ""
            phrases.append(f"{what}: {listed}{more}")
    if (
        phrases
        and notebooks_from
        and any(p.startswith(NOTEBOOK_PREFIX) for p in (*changed, *added))
    ):
        phrases.append(f"notebooks taken from {notebooks_from}")
    return tuple(phrases)


class NotebookNotFound(ReflectionError, FileNotFoundError):
    """The experiment notebooks (notebooks/*.py) cannot be found."""


#: How the run's notebooks were chosen (:func:`notebooks_source`).
NOTEBOOKS_ENV = "REFLECT_NOTEBOOKS"


def registered_notebooks_dir() -> Path | None:
    """The registered notebooks: the checkout's ``notebooks/`` or the packaged copy (the ones
    ``reflect prereg freeze`` hashes into the lock)."""
    for c in (
        Path(__file__).resolve().parents[3] / "notebooks",
        Path(__file__).resolve().parents[1] / "notebooks",
    ):
        if (c / EXPERIMENTS["p1"]).is_file():
            return c
    return None


def notebooks_source() -> tuple[Path, str]:
    """(the notebooks a run executes, how they were chosen), first that has them:
    ``$REFLECT_NOTEBOOKS``, ``./notebooks``, the registered ones."""
    env = os.environ.get(NOTEBOOKS_ENV)
    candidates = [(Path(env), f"${NOTEBOOKS_ENV}")] if env else []
    candidates.append((Path.cwd() / "notebooks", "./notebooks"))
    registered = registered_notebooks_dir()
    if registered is not None:
        candidates.append((registered, "registered"))
    for c, chosen in candidates:
        if (c / EXPERIMENTS["p1"]).is_file():
            return c, chosen
    raise NotebookNotFound(
        f"experiment notebooks not found (looked in {', '.join(str(c) for c, _ in candidates)}"
        "); run from the repository root or set REFLECT_NOTEBOOKS"
    )


def registered_code() -> dict[str, str]:
    """The analysis code ``reflect prereg freeze`` registers: the registered experiment and
    summary notebooks and the package's experiment, statistics and SQL code
    (:mod:`~agent_reflection.experiments.analysis_code`)."""
    folder = registered_notebooks_dir()
    if folder is None:
        raise NotebookNotFound(
            "the registered notebooks are not found (the checkout's notebooks/ or the "
            "package's copy); reinstall agent-reflection or run from its checkout"
        )
    return executed_code(folder, [*EXPERIMENTS.values(), SUMMARY_NOTEBOOK])


def executed_code(folder: Path, notebooks: Sequence[str]) -> dict[str, str]:
    """The analysis code of a run that executes ``notebooks`` from ``folder``."""
    return package_code() | notebook_code(folder / name for name in notebooks)
