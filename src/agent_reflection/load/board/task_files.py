"""Tasks kept as files in a git repository (one file per task under ``tasks/``, ``data/``...).

ONE streamed ``git log --reverse -p --unified=0 -M -- <folder>`` pass reads the folder's whole
history; no per-commit or per-file processes. Each file is a task (``task_ref`` = its path at
the last commit seen). From the added lines of each commit's diff:

* ``status``: a ``status: X`` line (Markdown front matter, YAML), ``"status": "X"`` (JSON,
  also inside a one-line object) or ``status = "X"`` (TOML); the first such line a commit
  adds is the file's new status;
* ``title``: a ``title:`` line likewise, else (Markdown files) the first ``# Heading``.

created_at = the commit that added the file; completed_at = the first commit whose status is a
done status (done, closed, completed, resolved, fixed, merged; case-insensitive). Events:
``created``, ``status_changed`` (detail ``old -> new``), ``renamed``, ``deleted``. Times are
committer times. Limit: a ``status:`` line in a file's body (outside its front matter) counts
too, since a zero-context diff does not show where in the file a line sits.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from agent_reflection.load.board.model import ParseOptions, Rejected, Task, TaskEvent
from agent_reflection.load.board.source import BoardFormatError, ProgressFn
from agent_reflection.load.git.repo import git_argv, git_env
from agent_reflection.load.text import decode_line
from agent_reflection.names import name_text

DEFAULT_FOLDER = "tasks/"
_COMMIT = "\x1e"
_FIELD = "\x1f"
_KEY_LINE = r"^\s*[\"']?{key}[\"']?\s*[:=]\s*[\"']?(?P<value>[^\"'#\n]*?)[\"']?\s*,?\s*$"
_STATUS = re.compile(_KEY_LINE.format(key="status"), re.IGNORECASE)
_TITLE = re.compile(_KEY_LINE.format(key="title"), re.IGNORECASE)
_HEADING = re.compile(r"^#\s+(?P<value>.+?)\s*$")
#: ``"status": "X"`` anywhere in a line (one-line JSON objects).
_JSON_STATUS = re.compile(r'"status"\s*:\s*"(?P<value>[^"]*)"', re.IGNORECASE)
_JSON_TITLE = re.compile(r'"title"\s*:\s*"(?P<value>[^"]*)"', re.IGNORECASE)


@dataclass
class _FileHistory:
    path: str
    created_at: datetime | None = None
    status: str | None = None
    title: str | None = None
    heading: str | None = None
    completed_at: datetime | None = None
    updated_on: datetime | None = None
    binary: bool = False
    events: list[TaskEvent] = field(default_factory=list)
    commits: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class _Change:
    """What one commit did to one file."""

    old_path: str | None = None
    new_path: str | None = None
    created: bool = False
    deleted: bool = False
    binary: bool = False
    status: str | None = None
    title: str | None = None
    heading: str | None = None


def parse_git_files(
    path: Path, options: ParseOptions, progress: ProgressFn | None = None
) -> Iterator[Task | Rejected]:
    """Every task file of ``path`` (a git work tree or bare repo) under ``--path``."""
    folder = options.path_filter or DEFAULT_FOLDER
    _require_repo(path)
    origin = options.origin or _origin(path)
    done = {s.lower() for s in options.done_statuses}
    files: dict[str, _FileHistory] = {}
    for sha, at, changes in _commits(path, folder, progress, options.encoding):
        for change in changes:
            _apply(files, sha, at, change, done)
    for history in files.values():
        location = f"{path}@{history.commits[-1]['sha'][:12]}:{history.path}"
        if history.binary:
            yield Rejected(
                location,
                None,
                "binary file: not a task file (status is not readable); "
                "UTF-16 text is binary to git: re-encode the file as UTF-8",
            )
            continue
        yield Task(
            task_ref=history.path,
            native_id=history.path,
            origin=origin,
            source="git-files",
            category="task",
            raw={"path": history.path, "commits": history.commits},
            title=history.title
            or (history.heading if history.path.lower().endswith((".md", ".markdown")) else None),
            kind=None,
            project=path.resolve().name,
            created_at=history.created_at,
            completed_at=history.completed_at,
            updated_on=history.updated_on,
            status=history.status,
            events=tuple(dict.fromkeys(history.events)),
            location=location,
        )


def _apply(
    files: dict[str, _FileHistory], sha: str, at: datetime, change: _Change, done: set[str]
) -> None:
    path = change.new_path or change.old_path
    if path is None:
        return
    if change.old_path and change.new_path and change.old_path != change.new_path:
        history = files.pop(change.old_path, None) or _FileHistory(change.new_path)
        history.path = change.new_path
        history.events.append(TaskEvent(at, "renamed", f"{change.old_path} -> {change.new_path}"))
        files[change.new_path] = history
    history = files.setdefault(path, _FileHistory(path))
    if history.created_at is None or change.created:
        if history.created_at is None:
            history.created_at = at
        history.events.append(TaskEvent(at, "created"))
    history.binary = history.binary or change.binary
    if change.status is not None and change.status != history.status:
        history.events.append(
            TaskEvent(at, "status_changed", f"{history.status or ''} -> {change.status}")
        )
        history.status = change.status
        if history.completed_at is None and change.status.lower() in done:
            history.completed_at = at
    history.title = change.title or history.title
    history.heading = history.heading or change.heading
    if change.deleted:
        history.events.append(TaskEvent(at, "deleted"))
    history.updated_on = at
    history.commits.append(
        {"sha": sha, "at": at.isoformat(), "status": history.status, "deleted": change.deleted}
    )


def _git(path: Path, *args: str) -> list[str]:
    return git_argv(path, "-c", "core.quotePath=false", *args)


def _require_repo(path: Path) -> None:
    probe = subprocess.run(
        _git(path, "rev-parse", "--git-dir"), capture_output=True, text=True, env=git_env(None)
    )
    if probe.returncode != 0:
        raise BoardFormatError(
            f"{path}: not a git repository ({probe.stderr.strip()}); --format git-files wants "
            "the path of a repository whose tasks/ (or --path) folder holds one file per task"
        )


def _origin(path: Path) -> str:
    url = subprocess.run(
        _git(path, "config", "--get", "remote.origin.url"),
        capture_output=True,
        env=git_env(None),
    ).stdout.strip()
    return name_text(url or os.fsencode(path.resolve().name))  # a record's text


def _commits(
    path: Path, folder: str, progress: ProgressFn | None, encoding: str | None = None
) -> Iterator[tuple[str, datetime, list[_Change]]]:
    """(sha, committer time, file changes) per commit touching ``folder``, oldest first.

    Lines are decoded by :func:`decode_line` (UTF-8, bytes that are not read as
    Windows-1252, or ``encoding``); a byte-order mark at a file's start and CRLF are ignored.
    """
    args = _git(
        path,
        "log",
        "--reverse",
        "--no-color",
        "--no-ext-diff",
        "-M",
        "-p",
        "--unified=0",
        f"--format={_COMMIT}%H{_FIELD}%cI",
        "--",
        folder,
    )
    with subprocess.Popen(
        args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=git_env(None)
    ) as proc:
        assert proc.stdout is not None
        sha: str | None = None
        at: datetime | None = None
        changes: list[_Change] = []
        current: _Change | None = None
        in_hunk = False
        for raw_line in proc.stdout:
            if progress is not None:
                progress(len(raw_line))
            line = decode_line(raw_line, encoding).rstrip("\r\n")
            if line.startswith(_COMMIT):
                if sha is not None and at is not None:
                    yield sha, at, changes
                sha, stamp = line[1:].split(_FIELD, 1)
                at = datetime.fromisoformat(stamp)
                changes, current, in_hunk = [], None, False
            elif line.startswith("diff --git "):
                current = _Change()
                same = _same_path(line[len("diff --git ") :])
                current.old_path = current.new_path = same
                changes.append(current)
                in_hunk = False
            elif current is None:
                continue
            elif in_hunk and line[:1] in ("+", "-", " ", "\\"):
                if line.startswith("+"):
                    _scan_added(current, line[1:].lstrip("\ufeff"))
            elif line.startswith("@@"):
                in_hunk = True
            else:
                _header(current, line)
        if sha is not None and at is not None:
            yield sha, at, changes
        stderr = proc.stderr.read().decode("utf-8", errors="replace") if proc.stderr else ""
    if proc.returncode not in (0, None) and "does not have any commits" not in stderr:
        raise BoardFormatError(f"{path}: git log failed: {stderr.strip()}")


def _same_path(rest: str) -> str | None:
    """``a/P b/P`` -> P (None when the two paths differ, e.g. a rename)."""
    if not rest.startswith("a/"):
        return None
    body = rest[2:]
    half = (len(body) - 3) // 2
    if len(body) >= 3 and body[half : half + 3] == " b/" and body[:half] == body[half + 3 :]:
        return body[:half]
    return None


def _header(change: _Change, line: str) -> None:
    if line.startswith("new file mode"):
        change.created = True
    elif line.startswith("deleted file mode"):
        change.deleted = True
    elif line.startswith("rename from "):
        change.old_path = line[len("rename from ") :]
    elif line.startswith("rename to "):
        change.new_path = line[len("rename to ") :]
    elif line.startswith("--- a/"):  # git ends the name with a tab when it has a space
        change.old_path = line[len("--- a/") :].removesuffix("\t")
    elif line.startswith("+++ b/"):
        change.new_path = line[len("+++ b/") :].removesuffix("\t")
    elif line.startswith("+++ /dev/null"):
        change.new_path = None
    elif line.startswith("--- /dev/null"):
        change.old_path = None
    elif line.startswith("Binary files "):
        change.binary = True


def _scan_added(change: _Change, text: str) -> None:
    if change.status is None:
        m = _STATUS.match(text) or _JSON_STATUS.search(text)
        if m and m.group("value").strip():
            change.status = m.group("value").strip()
    if change.title is None:
        m = _TITLE.match(text) or _JSON_TITLE.search(text)
        if m and m.group("value").strip():
            change.title = m.group("value").strip()
    if change.heading is None and (m := _HEADING.match(text)):
        change.heading = m.group("value")
