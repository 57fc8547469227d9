"""One sidecar file -> one ``reflections`` row, or the reason (with its JSON path) it cannot be.

Stdlib-only and free of DuckDB, so the worker processes of
:mod:`agent_reflection.load.sidecars.loader` start fast. Every record is validated against
reflection.v1 by :func:`agent_reflection.reflection.checks.reflection_row`, the same checks the
Stop hook runs before writing: it returns the row or names the JSON path of the problem. The
columns and the canonical encoding follow the field declaration
(:mod:`agent_reflection.reflection.fields`); the canonical text is ``json``'s, sorted keys.

On top of reflection.v1 the loader needs two things the database can hold: a ``timestamp``
that is a real instant (not ``2026-02-30``) and a ``reflection_attempt`` that fits a 32-bit
integer; records failing those are rejected too, naming the field.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from agent_reflection.errors import InvalidSidecar, json_error_message
from agent_reflection.names import lone_surrogate, name_text
from agent_reflection.redact import UNKEYED, Redactor
from agent_reflection.reflection.checks import describe_problems, record_problems, reflection_row
from agent_reflection.reflection.fields import ROW_COLUMNS, SCHEMA_VERSION, SUPPORTED_VERSIONS

#: Files larger than this are not read at all (a sidecar is ~1 KB; a huge one is something else).
MAX_SIDECAR_BYTES = 16 * 1024 * 1024
#: Bytes of a rejected file kept as its raw text (``LoadRun.reject`` bounds it further).
RAW_PREFIX_BYTES = 16 * 1024
INT32_MAX = 2**31 - 1

#: Columns of a batch, in order: the ``reflections`` columns except ``load_id``, plus ``ord``
#: (the file's position in the load, so the first of several identical records wins).
COLUMNS: tuple[str, ...] = ("content_hash", *ROW_COLUMNS, "source_file", "raw", "ord")

#: (location, raw bytes or None, reason) of a file that could not be loaded.
Rejection = tuple[str, bytes | None, str]

_TIMESTAMP = ROW_COLUMNS.index("timestamp")
_ATTEMPT = ROW_COLUMNS.index("reflection_attempt")
#: The canonical text whose SHA-256 is the content hash, the ``reflections`` primary key
#: (sorted keys, no spaces, UTF-8).
canonical_json = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, check_circular=False
).encode  # parsed JSON holds no cycles: skipping the check saves ~8% of the encoding


@dataclass(frozen=True)
class ChunkResult:
    """What one worker made of a chunk of files: column tuples (see :data:`COLUMNS`)."""

    columns: tuple[tuple[Any, ...], ...] | None
    rejects: list[Rejection] = field(default_factory=list)
    files: int = 0
    bytes: int = 0


def process_files(
    paths: Sequence[str], start: int, max_bytes: int, redact_key: bytes | None = UNKEYED
) -> ChunkResult:
    """Read, redact, parse and validate each file; the worker-process entry point.

    Secrets are redacted from each file's text before it is parsed (so the stored row, its raw
    JSON and its content hash are of the redacted record) with ``redact_key``; None: not.
    """
    redactor = Redactor(redact_key or UNKEYED, enabled=redact_key is not None)
    rows: list[tuple[Any, ...]] = []
    rejects: list[Rejection] = []
    nbytes = 0
    for offset, path in enumerate(paths):
        data = read_sidecar_bytes(path, max_bytes)
        if isinstance(data, tuple):
            rejects.append(data)
            continue
        nbytes += len(data)
        data = redactor.bytes(data)
        result = sidecar_row(data, name_text(path))  # the row's source_file
        if isinstance(result, Reject):
            rejects.append((result.location, data[:RAW_PREFIX_BYTES], result.reason))
        else:
            rows.append((*result, start + offset))
    columns = tuple(zip(*rows, strict=True)) if rows else None
    return ChunkResult(columns, rejects, len(paths), nbytes)


def read_sidecar_bytes(path: str, max_bytes: int = MAX_SIDECAR_BYTES) -> bytes | Rejection:
    """The file's bytes, or a rejection saying why it cannot be read (never reads > max_bytes)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        return (
            path,
            None,
            f"cannot read the file: {exc.strerror or exc} — check it exists and "
            "is readable (a dangling or looping symlink cannot be read)",
        )
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return (path, None, "not a sidecar: not a regular file (a pipe, device or socket)")
        size = info.st_size
        if size > max_bytes:
            head = os.read(fd, RAW_PREFIX_BYTES)
            return (
                path,
                head,
                f"not a sidecar: {size / 2**20:,.1f} MB is over the "
                f"{max_bytes / 2**20:g} MB limit for one sidecar file (a sidecar is ~1 KB); "
                "was a log or export saved under a sidecar name?",
            )
        data = os.read(fd, size) if size else b""
        while len(data) < size:  # a short read: keep going until what stat promised
            more = os.read(fd, size - len(data))
            if not more:
                break
            data += more
        return data
    except OSError as exc:
        return (path, None, f"cannot read the file: {exc.strerror or exc}")
    finally:
        os.close(fd)


@dataclass(frozen=True)
class Reject:
    """Why one record cannot be loaded: ``location`` is ``file#/json/path``."""

    location: str
    reason: str


def sidecar_row(data: bytes, path: str) -> tuple[Any, ...] | Reject:
    """Parse and validate one file's bytes into a row (:data:`COLUMNS` minus ``ord``)."""
    if not data.strip():
        return Reject(path, "empty file: not a sidecar (was its writer interrupted?)")
    try:
        obj = json.loads(data)
    except UnicodeDecodeError as exc:
        return Reject(
            path,
            f"not a sidecar: not UTF-8 text (byte 0x{data[exc.start]:02x} at "
            f"offset {exc.start}) — a binary file?",
        )
    except json.JSONDecodeError as exc:
        return Reject(
            path,
            f"invalid JSON at line {exc.lineno} column {exc.colno}: {json_error_message(exc)} "
            "(a truncated or hand-edited file?) — fix or re-write the sidecar",
        )
    except (ValueError, RecursionError) as exc:
        return Reject(path, f"invalid JSON: {exc}")
    try:
        row = reflection_row(obj)
    except InvalidSidecar as exc:
        if isinstance(obj, dict) and obj.get("schema", SCHEMA_VERSION) not in SUPPORTED_VERSIONS:
            return Reject(f"{path}#/schema", unsupported_version_reason(obj["schema"]))
        # every problem of the record at once, located at the first
        problems = record_problems(obj) or (exc,)
        return Reject(f"{path}#{problems[0].path}", describe_problems(problems))
    problem = _storage_problem(row)
    if problem is not None:
        return Reject(f"{path}#{problem[0]}", problem[1])
    try:
        canonical = canonical_json(obj).encode("utf-8")
    except UnicodeEncodeError:
        where = lone_surrogate(obj) or "/"
        return Reject(
            f"{path}#{where}",
            f"invalid text at {where}: an unpaired UTF-16 surrogate escape (e.g. \\ud800) "
            "is not Unicode — fix the writer",
        )
    return (hashlib.sha256(canonical).hexdigest(), *row, path, canonical.decode("utf-8"))


def unsupported_version_reason(version: Any) -> str:
    """The reason given for a record whose ``schema`` is not a version this package reads."""
    return (
        f"unsupported schema version {version!r} at /schema: supported versions are "
        f"{', '.join(SUPPORTED_VERSIONS)} — upgrade agent-reflection to read newer sidecars"
    )


def _storage_problem(row: tuple[Any, ...]) -> tuple[str, str] | None:
    timestamp = row[_TIMESTAMP]
    try:
        datetime.fromisoformat(timestamp)
    except ValueError as exc:
        return "/timestamp", f"invalid reflection.v1 at /timestamp: not a real instant ({exc})"
    if row[_ATTEMPT] > INT32_MAX:
        return (
            "/provenance/reflection_attempt",
            f"invalid reflection.v1 at /provenance/reflection_attempt: at most {INT32_MAX:,}, "
            f"got {row[_ATTEMPT]!r}",
        )
    return None
