"""One sidecar file -> one ``reflections`` row, or the reason (with its JSON path) it cannot be.

Stdlib-only and free of DuckDB, so the worker processes of
:mod:`agent_reflection.load.sidecars.loader` start fast. Every record is validated against
reflection.v1: a fast, allocation-light check
(:func:`fast_row`) accepts the common valid record; anything it does not accept goes through
:func:`agent_reflection.reflection.record.validate_sidecar`, which either names the JSON path of the
problem or (if the fast check was merely conservative) accepts it. The fast check is sound by
construction and by test: it never accepts a record ``validate_sidecar`` rejects, and the row
it builds equals the one built from ``validate_sidecar``'s result.

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

from agent_reflection.errors import InvalidSidecar
from agent_reflection.reflection.record import (
    FIELDS,
    REFLECTION_MODES,
    SCHEMA_VERSION,
    SUPPORTED_VERSIONS,
    SURFACE_VALUES,
    TIMESTAMP_RE,
    Reflection,
    validate_sidecar,
)

#: Files larger than this are not read at all (a sidecar is ~1 KB; a huge one is something else).
MAX_SIDECAR_BYTES = 16 * 1024 * 1024
#: Bytes of a rejected file kept as its raw text (``LoadRun.reject`` bounds it further).
RAW_PREFIX_BYTES = 16 * 1024
INT32_MAX = 2**31 - 1

#: Columns of a batch, in order: the ``reflections`` columns except ``load_id``, plus ``ord``
#: (the file's position in the load, so the first of several identical records wins).
COLUMNS: tuple[str, ...] = (
    "content_hash", "schema_version", "task_ref", "agent", "session_id", "timestamp", "repo",
    "confidence", "mlw_surface", "mlw_description", "known_not_in_diff", "risk_needs_review",
    "risk_score", "risk_surface", "risk_reason", "files_changed", "source", "reflection_attempt",
    "degraded", "reflection_mode", "source_file", "raw", "ord",
)  # fmt: skip

#: (location, raw bytes or None, reason) of a file that could not be loaded.
Rejection = tuple[str, bytes | None, str]

_FIELD_SET = frozenset(FIELDS)
_MLW_KEYS = frozenset(("surface", "description"))
_RISK_KEYS = frozenset(("needs_review", "score", "surface", "reason"))
_PROVENANCE_KEYS = frozenset(("source", "reflection_attempt", "degraded", "reflection_mode"))
_SURFACES = frozenset(SURFACE_VALUES)
_MODES = frozenset(REFLECTION_MODES)
_encode_string = json.encoder.encode_basestring  # what json.dumps uses with ensure_ascii=False
_canonical = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode


def canonical_json(obj: Any) -> str:
    """The canonical text the content hash is taken of (sorted keys, no spaces, UTF-8)."""
    return _canonical(obj)


def content_hash(obj: Any) -> str:
    """SHA-256 (hex) of :func:`canonical_json` — the ``reflections`` primary key."""
    return hashlib.sha256(_canonical(obj).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class ChunkResult:
    """What one worker made of a chunk of files: column tuples (see :data:`COLUMNS`)."""

    columns: tuple[tuple[Any, ...], ...] | None
    rejects: list[Rejection] = field(default_factory=list)
    files: int = 0
    bytes: int = 0


def process_files(paths: Sequence[str], start: int, max_bytes: int) -> ChunkResult:
    """Read, parse and validate each file; the worker-process entry point."""
    rows: list[tuple[Any, ...]] = []
    rejects: list[Rejection] = []
    nbytes = 0
    for offset, path in enumerate(paths):
        data = read_sidecar_bytes(path, max_bytes)
        if isinstance(data, tuple):
            rejects.append(data)
            continue
        nbytes += len(data)
        result = sidecar_row(data, path)
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
        return (path, None, f"cannot read the file: {exc.strerror or exc} — check it exists and "
                "is readable (a dangling or looping symlink cannot be read)")  # fmt: skip
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return (path, None, "not a sidecar: not a regular file (a pipe, device or socket)")
        size = info.st_size
        if size > max_bytes:
            head = os.read(fd, RAW_PREFIX_BYTES)
            return (path, head, f"not a sidecar: {size / 2**20:,.1f} MB is over the "
                    f"{max_bytes / 2**20:g} MB limit for one sidecar file (a sidecar is ~1 KB); "
                    "was a log or export saved under a sidecar name?")  # fmt: skip
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
        return Reject(path, f"not a sidecar: not UTF-8 text (byte 0x{data[exc.start]:02x} at "
                      f"offset {exc.start}) — a binary file?")  # fmt: skip
    except json.JSONDecodeError as exc:
        return Reject(
            path,
            f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg} "
            "(a truncated or hand-edited file?) — fix or re-write the sidecar",
        )
    except (ValueError, RecursionError) as exc:
        return Reject(path, f"invalid JSON: {exc}")
    row = fast_row(obj)
    to_json = _canonical if row is None else fast_canonical_json
    if row is None:
        if isinstance(obj, dict) and obj.get("schema", SCHEMA_VERSION) not in SUPPORTED_VERSIONS:
            return Reject(f"{path}#/schema", unsupported_version_reason(obj["schema"]))
        try:
            row = reflection_row(validate_sidecar(obj))
        except InvalidSidecar as exc:
            return Reject(
                f"{path}#{exc.path}", f"invalid reflection.v1 at {exc.path}: {exc.expected}"
            )
    problem = _storage_problem(row)
    if problem is not None:
        return Reject(f"{path}#{problem[0]}", problem[1])
    try:
        canonical = to_json(obj).encode("utf-8")
    except UnicodeEncodeError:
        where = _surrogate_path(obj, "") or "/"
        return Reject(
            f"{path}#{where}",
            f"invalid text at {where}: an unpaired UTF-16 surrogate escape (e.g. \\ud800) "
            "is not Unicode — fix the writer",
        )
    return (
        hashlib.sha256(canonical).hexdigest(), *row, path, canonical.decode("utf-8")
    )  # fmt: skip


def unsupported_version_reason(version: Any) -> str:
    """The reason given for a record whose ``schema`` is not a version this package reads."""
    return (
        f"unsupported schema version {version!r} at /schema: supported versions are "
        f"{', '.join(SUPPORTED_VERSIONS)} — upgrade agent-reflection to read newer sidecars"
    )


def _storage_problem(row: tuple[Any, ...]) -> tuple[str, str] | None:
    timestamp = row[4]
    try:
        datetime.fromisoformat(timestamp)
    except ValueError as exc:
        return "/timestamp", f"invalid reflection.v1 at /timestamp: not a real instant ({exc})"
    if row[16] > INT32_MAX:
        return (
            "/provenance/reflection_attempt",
            f"invalid reflection.v1 at /provenance/reflection_attempt: at most {INT32_MAX:,}, "
            f"got {row[16]!r}",
        )
    return None


def _surrogate_path(obj: Any, path: str) -> str | None:
    if isinstance(obj, str):
        try:
            obj.encode("utf-8")
        except UnicodeEncodeError:
            return path or "/"
        return None
    items = (
        obj.items() if isinstance(obj, dict) else enumerate(obj) if isinstance(obj, list) else ()
    )
    for key, value in items:
        if isinstance(key, str) and _surrogate_path(key, "") is not None:
            return f"{path}/{key.encode('utf-8', 'backslashreplace').decode()}"
        found = _surrogate_path(value, f"{path}/{key}")
        if found is not None:
            return found
    return None


def fast_canonical_json(obj: dict[str, Any]) -> str:
    """:func:`canonical_json` of a record :func:`fast_row` accepted, ~40% faster.

    The key order and layout are fixed by reflection.v1, so only the values need encoding,
    each exactly as ``json.dumps`` encodes it (tests check equality on generated records).
    """
    s = _encode_string
    mlw, prov, risk = obj["most_likely_wrong"], obj["provenance"], obj["risk"]
    return _CANONICAL_TEMPLATE % (
        s(obj["agent"]), _number_or_null(obj["confidence"]), ",".join(map(s, obj["files_changed"])),
        "null" if obj["known_not_in_diff"] is None else s(obj["known_not_in_diff"]),
        "null" if mlw is None
        else f'{{"description":{s(mlw["description"])},"surface":{s(mlw["surface"])}}}',
        "true" if prov["degraded"] else "false", _number_or_null(prov["reflection_attempt"]),
        s(prov["reflection_mode"]), s(prov["source"]), s(obj["repo"]),
        "true" if risk["needs_review"] else "false", s(risk["reason"]),
        _number_or_null(risk["score"]), s(risk["surface"]), s(obj["schema"]),
        s(obj["session_id"]), s(obj["task_ref"]), s(obj["timestamp"]),
    )  # fmt: skip


_CANONICAL_TEMPLATE = (
    '{"agent":%s,"confidence":%s,"files_changed":[%s],"known_not_in_diff":%s,'
    '"most_likely_wrong":%s,"provenance":{"degraded":%s,"reflection_attempt":%s,'
    '"reflection_mode":%s,"source":%s},"repo":%s,"risk":{"needs_review":%s,"reason":%s,'
    '"score":%s,"surface":%s},"schema":%s,"session_id":%s,"task_ref":%s,"timestamp":%s}'
)


def _number_or_null(value: Any) -> str:
    if value is None:
        return "null"
    return int.__repr__(value) if type(value) is int else float.__repr__(value)


def reflection_row(r: Reflection) -> tuple[Any, ...]:
    """The row (schema_version … reflection_mode) of a validated :class:`Reflection`."""
    mlw = r.most_likely_wrong
    return (
        r.schema, r.task_ref, r.agent, r.session_id, r.timestamp, r.repo, r.confidence,
        None if mlw is None else mlw.surface, None if mlw is None else mlw.description,
        r.known_not_in_diff, r.risk.needs_review, r.risk.score, r.risk.surface, r.risk.reason,
        list(r.files_changed), r.provenance.source, r.provenance.reflection_attempt,
        r.provenance.degraded, r.provenance.reflection_mode,
    )  # fmt: skip


def fast_row(obj: Any) -> tuple[Any, ...] | None:
    """:func:`reflection_row` of a plainly valid record without building the typed model.

    ``None`` means "not sure": the caller falls back to ``validate_sidecar``. Only exact
    ``dict``/``list``/``str`` types (what ``json.loads`` makes) are accepted here.
    """
    if type(obj) is not dict or obj.keys() != _FIELD_SET or obj["schema"] != SCHEMA_VERSION:
        return None
    task_ref, agent, session_id = obj["task_ref"], obj["agent"], obj["session_id"]
    timestamp, repo, known = obj["timestamp"], obj["repo"], obj["known_not_in_diff"]
    if not (
        type(task_ref) is str and task_ref and type(agent) is str and agent
        and type(session_id) is str and session_id and type(repo) is str and repo
        and type(timestamp) is str and TIMESTAMP_RE.match(timestamp)
        and (known is None or type(known) is str)
    ):  # fmt: skip
        return None
    confidence = obj["confidence"]
    if confidence is not None:
        if not ((type(confidence) is float or type(confidence) is int) and 0 <= confidence <= 1):
            return None
        confidence = float(confidence)
    mlw = obj["most_likely_wrong"]
    mlw_surface = mlw_description = None
    if mlw is not None:
        if type(mlw) is not dict or mlw.keys() != _MLW_KEYS:
            return None
        mlw_surface, mlw_description = mlw["surface"], mlw["description"]
        if not (type(mlw_surface) is str and mlw_surface in _SURFACES):
            return None
        if type(mlw_description) is not str:
            return None
    risk = obj["risk"]
    if type(risk) is not dict or risk.keys() != _RISK_KEYS:
        return None
    needs_review, score, surface, reason = (
        risk["needs_review"], risk["score"], risk["surface"], risk["reason"]
    )  # fmt: skip
    if not (
        type(needs_review) is bool and (type(score) is float or type(score) is int)
        and 0 <= score <= 1 and type(surface) is str and surface in _SURFACES
        and type(reason) is str
    ):  # fmt: skip
        return None
    files = obj["files_changed"]
    if type(files) is not list or not all(type(f) is str for f in files):
        return None
    prov = obj["provenance"]
    if type(prov) is not dict or prov.keys() != _PROVENANCE_KEYS:
        return None
    attempt, degraded, mode = prov["reflection_attempt"], prov["degraded"], prov["reflection_mode"]
    if prov["source"] != "stop-hook" or type(degraded) is not bool:
        return None
    if not (type(mode) is str and mode in _MODES):
        return None
    if type(attempt) is float and attempt.is_integer() and attempt >= 1:
        attempt = int(attempt)
    elif not (type(attempt) is int and attempt >= 1):
        return None
    return (
        SCHEMA_VERSION, task_ref, agent, session_id, timestamp, repo, confidence, mlw_surface,
        mlw_description, known, needs_review, float(score), surface, reason, list(files),
        "stop-hook", attempt, degraded, mode,
    )  # fmt: skip
