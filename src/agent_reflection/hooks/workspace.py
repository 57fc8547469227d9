"""The user's repository as a workspace: its marker file, and its generated files kept out of
the user's commits (``reflect hook install``).

- :func:`mark_workspace` writes ``.agent-reflection.toml`` at the project root when no
  workspace marker is there: ``reflect`` commands and the notebooks, run anywhere below it,
  then find the same database and reports (:func:`agent_reflection.config.find_workspace`). The
  file it writes puts both under ``.reflection/``, beside the sidecars, so one ignored folder
  holds everything the workspace generates.
- :func:`exclude_generated` adds the generated paths to the repository's ``info/exclude``
  (never to a file that is committed): sidecars and self-reports can hold secrets, and an
  agent's ``git add -A`` must not commit them.
- :func:`ignored_by` says which ignore rule hides a file the installer wrote to be committed.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from agent_reflection import config
from agent_reflection.hooks.gitstate import GitFailed, git

#: The folder the hooks write (sidecars, the self-report) and the marker puts the rest in.
GENERATED_DIR = ".reflection"
#: What :func:`mark_workspace` writes.
MARKER_TEXT = f"""\
# agent-reflection workspace (written by `reflect hook install`; commit it). `reflect` commands
# and the notebooks run in this folder or below use the database and reports named here,
# relative to this folder; --db, $REFLECT_DB, --out and $REFLECT_REPORTS still win.
# Everything here is generated and kept out of commits by .git/info/exclude.
# Every setting: docs/configuration.md.
db = "{GENERATED_DIR}/reflection.duckdb"
reports = "{GENERATED_DIR}/reports"
"""
#: The comment line above the lines :func:`exclude_generated` adds.
EXCLUDE_HEADER = "# agent-reflection: generated files (reflect hook install)"


def mark_workspace(root: str) -> str | None:
    """Write the marker at ``root`` unless ``root`` already holds one; the path written, or
    None."""
    if config.marker_in(root) is not None:
        return None
    path = os.path.join(root, config.PROJECT_FILE)
    with open(path, "x", encoding="utf-8") as handle:
        handle.write(MARKER_TEXT)
    return path


def generated_patterns(root: str, extra: Sequence[str] = ()) -> list[str]:
    """The ``info/exclude`` lines for the workspace at ``root``: ``/.reflection/``, its
    database (and write-ahead log) and reports folder when they lie elsewhere inside ``root``,
    and ``extra`` (root-relative paths, e.g. ``CLAUDE.local.md``)."""
    patterns = [f"/{GENERATED_DIR}/"]
    workspace = config.Workspace(os.path.abspath(root), None, "the project")
    inside: list[tuple[str, bool]] = []
    for setting, folder in ((config.DB, False), (config.REPORTS, True)):
        value = config.project_value(root, setting.key)
        raw = value[0] if value else setting.default
        if not isinstance(raw, str):
            continue
        path = os.path.normpath(os.path.join(workspace.root, os.path.expanduser(raw)))
        rel = os.path.relpath(path, workspace.root)
        if rel.startswith(os.pardir) or rel.split(os.sep)[0] == GENERATED_DIR:
            continue
        inside.append((rel.replace(os.sep, "/"), folder))
    for rel, folder in inside:
        patterns.append(f"/{rel}/" if folder else f"/{rel}")
        if not folder:
            patterns.append(f"/{rel}.wal")
    patterns.extend(f"/{p.lstrip('/')}" for p in extra)
    return patterns


def exclude_file(root: str) -> str:
    """The repository's ``info/exclude`` (``git rev-parse --git-path``: right in a linked
    worktree too). Raises :class:`GitFailed` outside a repository."""
    out = git(["rev-parse", "--git-path", "info/exclude"], root)
    path = os.fsdecode(out).strip()
    return path if os.path.isabs(path) else os.path.join(root, path)


def exclude_generated(root: str, patterns: Sequence[str]) -> tuple[str, list[str]]:
    """Append the ``patterns`` missing from ``info/exclude`` (under :data:`EXCLUDE_HEADER`);
    ``(the file, the lines added)``. Raises :class:`GitFailed` outside a repository."""
    path = exclude_file(root)
    try:
        # a pattern git reads as bytes may hold bytes that are not UTF-8: kept as they are
        with open(path, encoding="utf-8", errors="surrogateescape") as handle:
            text = handle.read()
    except FileNotFoundError:
        text = ""
    present = {line.strip() for line in text.splitlines()}
    added = [p for p in patterns if p not in present]
    if added:
        lead = "" if not text or text.endswith("\n") else "\n"
        header = [] if EXCLUDE_HEADER in present else [EXCLUDE_HEADER]
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "a", encoding="utf-8", errors="surrogateescape") as handle:
            handle.write(lead + "\n".join([*header, *added]) + "\n")
    return path, added


def ignored_by(root: str, path: str) -> str | None:
    """The rule that makes git ignore the untracked ``path`` (``<source>:<line>: <pattern>``),
    else None (not ignored, tracked, or no repository)."""
    try:
        out = git(["check-ignore", "-v", "--", path], root)
    except GitFailed:
        return None  # exit 1: not ignored
    source, _, rest = os.fsdecode(out).strip().partition("\t")
    file, _, line_pattern = source.partition(":")
    line, _, pattern = line_pattern.partition(":")
    return f"{file}:{line}: {pattern}" if rest else None
