"""Load Claude Code session transcripts (JSONL) into ``messages``, ``sessions``,
``tool_calls``, ``checkpoints`` and ``escalations``.

The format is internal to Claude Code and changes between versions, so the loader is lenient
where it can be and explicit where it cannot: one JSON object per line, tagged by ``type``;
``user``/``assistant`` lines wrap a Messages-API ``message`` whose ``content`` is a string or a
list of blocks (``text``, ``thinking``, ``tool_use``, ``tool_result``, ``image``). Lines of any
other type are kept as they are (raw JSON). A line that is not a JSON object, or a
``user``/``assistant`` line without a ``message`` object, is rejected with the reason.

Checkpoints are found by the first line of our prompt (:data:`agent_reflection.in_loop.cadence.
CHECKPOINT_FLAG`) anywhere in a line: a tool result, a hook's ``additionalContext``, an
attachment or plain user text. Escalations are ``<ESCALATION>`` blocks in assistant text or in
the inputs of an assistant's tool calls (a Task prompt handing a block to a subagent).

:func:`parse_transcript` is pure; :func:`load_transcripts` writes. Loading a file again, or a
file that grew, adds only new lines; derived tables are rebuilt per file and carry no load id,
so loading twice leaves every table identical.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb

from agent_reflection.escalation.contract import (
    Block,
    parse_escalations,
    validate_terminal,
    validate_trigger,
)
from agent_reflection.in_loop.cadence import CHECKPOINT_FLAG
from agent_reflection.load.text import (
    READ_ERRORS,
    LongLine,
    TextSource,
    check_encoding,
    is_binary,
)
from agent_reflection.store.db import LoadSummary, begin_load

SOURCE = "transcripts"
RESULT_TEXT_LIMIT = 2000
_DELTA = re.compile(r"(\d+) tool calls since the last checkpoint")
_TASK = re.compile(r"=== ORIGINAL TASK ===\n(.*?)\n=== END ORIGINAL TASK ===", re.S)


@dataclass(frozen=True)
class Reject:
    line_no: int
    raw: str
    reason: str


@dataclass(frozen=True)
class TranscriptParse:
    """Rows of one transcript file, ready to insert (tuples in table column order)."""

    source_file: str
    messages: tuple[tuple[Any, ...], ...]
    tool_calls: tuple[tuple[Any, ...], ...]
    checkpoints: tuple[tuple[Any, ...], ...]
    escalations: tuple[tuple[Any, ...], ...]
    sessions: tuple[tuple[Any, ...], ...]
    rejects: tuple[Reject, ...]
    lines_read: int = 0
    duplicates: int = 0


@dataclass
class _Session:
    source_file: str
    first_ts: str | None = None
    last_ts: str | None = None
    cwd: str | None = None
    git_branch: str | None = None
    version: str | None = None
    first_prompt: str | None = None
    lines: int = 0
    prompts: int = 0
    tool_calls: int = 0
    task_calls: int = 0
    checkpoints: int = 0
    escalations: int = 0
    calls: dict[str, list[Any]] = field(default_factory=dict)


def _ts(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return value


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [b for b in content if isinstance(b, dict)]
    return []


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(b.get("text", "")) for b in content if isinstance(b, dict) and "text" in b
        )
    return "" if content is None else json.dumps(content)


def _strings(value: Any, path: str) -> Iterator[tuple[str, str]]:
    """Every string inside ``value`` with its JSON path."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(item, f"{path}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _strings(item, f"{path}[{i}]")


def _location(line_type: str, path: str) -> str:
    if "additionalContext" in path:
        return "additional_context"
    if line_type == "attachment":
        return "attachment"
    if "toolUseResult" in path or (line_type == "user" and "].content" in path):
        return "tool_result"
    if line_type == "user" and path.startswith("$.message.content"):
        return "user_text"
    return "other"


def _band(attempt: int | None) -> str | None:
    if attempt is None:
        return None
    return "1-2" if attempt <= 2 else "3" if attempt == 3 else "4+"


def _tool_target(tool_input: Any) -> tuple[str | None, str | None]:
    if not isinstance(tool_input, dict):
        return None, None
    command = tool_input.get("command")
    path = next(
        (tool_input[k] for k in ("file_path", "notebook_path", "path") if k in tool_input), None
    )
    return (
        command if isinstance(command, str) else None,
        path if isinstance(path, str) else None,
    )


def _escalation_row(
    sid: str, key: str, index: int, seq: int, block: Block, ts: str | None
) -> tuple[Any, ...]:
    problems = tuple(str(p) for p in validate_terminal(block))
    return (
        sid, key, index, seq, block.status or None, block.attempt, _band(block.attempt),
        list(block.failure_layers), not validate_trigger(block), not problems, list(problems),
        ts, block.raw,
    )  # fmt: skip


def parse_transcript(lines: Iterable[str | LongLine], source_file: str) -> TranscriptParse:
    """Rows for every table from the lines of one transcript file (pure).

    A :class:`~agent_reflection.load.text.LongLine` (over the length limit) is rejected.
    """
    stem = Path(source_file).name.split(".")[0]
    file_session: str | None = None
    sessions: dict[str, _Session] = {}
    messages: list[tuple[Any, ...]] = []
    checkpoints: list[tuple[Any, ...]] = []
    escalations: list[tuple[Any, ...]] = []
    rejects: list[Reject] = []
    seen_keys: set[tuple[str, str]] = set()
    read = duplicates = 0
    for line_no, raw_line in enumerate(lines, start=1):
        if isinstance(raw_line, LongLine):
            read += 1
            rejects.append(Reject(line_no, raw_line.head, raw_line.reason()))
            continue
        raw = raw_line.rstrip("\n")  # a CRLF line keeps its "\r": JSON whitespace, same key
        if not raw.strip():
            continue
        read += 1
        try:
            record = json.loads(raw)
        except ValueError as exc:
            rejects.append(Reject(line_no, raw, f"not JSON ({exc}); each line must be one object"))
            continue
        if not isinstance(record, dict):
            rejects.append(Reject(line_no, raw, f"a JSON {type(record).__name__}, not an object"))
            continue
        line_type = record.get("type")
        if not isinstance(line_type, str) or not line_type:
            rejects.append(Reject(line_no, raw, "no 'type' field; every line is tagged by type"))
            continue
        message = record.get("message")
        if line_type in ("user", "assistant") and not isinstance(message, dict):
            rejects.append(
                Reject(line_no, raw, f"{line_type} line without a 'message' object")
            )  # fmt: skip
            continue
        sid_value = record.get("sessionId")
        if isinstance(sid_value, str) and sid_value:
            file_session = file_session or sid_value
            sid = sid_value
        else:
            sid = file_session or stem
        uuid = record.get("uuid") if isinstance(record.get("uuid"), str) else None
        key = uuid or "sha256:" + hashlib.sha256(raw.encode("utf-8")).hexdigest()
        if (sid, key) in seen_keys:  # the same line twice: already present, not new
            duplicates += 1
            continue
        seen_keys.add((sid, key))
        ses = sessions.setdefault(sid, _Session(source_file))
        ses.lines += 1
        ts = _ts(record.get("timestamp"))
        if ts:
            ses.first_ts = ses.first_ts or ts
            ses.last_ts = ts
        for attr, name in (("cwd", "cwd"), ("git_branch", "gitBranch"), ("version", "version")):
            if getattr(ses, attr) is None and isinstance(record.get(name), str):
                setattr(ses, attr, record[name])
        msg = message if isinstance(message, dict) else {}
        blocks = _blocks(msg)
        is_meta = bool(record.get("isMeta")) or bool(record.get("isCompactSummary"))
        n_use = sum(1 for b in blocks if b.get("type") == "tool_use")
        n_result = sum(1 for b in blocks if b.get("type") == "tool_result")
        texts = [str(b.get("text", "")) for b in blocks if b.get("type") == "text"]
        text = "\n".join(texts) if texts else None
        is_prompt = line_type == "user" and not is_meta and n_result == 0 and bool(texts)
        if is_prompt:
            ses.prompts += 1
            ses.task_calls = 0
            ses.first_prompt = ses.first_prompt or text
        if line_type == "assistant":
            for b in blocks:
                if b.get("type") == "tool_use" and isinstance(b.get("id"), str):
                    ses.tool_calls += 1
                    ses.task_calls += 1
                    command, path = _tool_target(b.get("input"))
                    ses.calls[b["id"]] = [
                        sid, b["id"], ses.tool_calls, ses.prompts, ses.task_calls, uuid,
                        str(b.get("name") or "?"), json.dumps(b.get("input")), command, path, ts,
                        None, None, None, None,
                    ]  # fmt: skip
        for b in blocks:
            if b.get("type") == "tool_result" and b.get("tool_use_id") in ses.calls:
                row = ses.calls[b["tool_use_id"]]
                row[11:15] = [
                    uuid, _result_text(b.get("content"))[:RESULT_TEXT_LIMIT],
                    bool(b.get("is_error")), ts,
                ]  # fmt: skip
        seen_texts: set[str] = set()
        for path, value in _strings(record, "$"):
            if CHECKPOINT_FLAG in value and value not in seen_texts:
                seen_texts.add(value)
                start = value[value.index(CHECKPOINT_FLAG) :]
                delta = _DELTA.search(start)
                task = _TASK.search(start)
                checkpoints.append((
                    sid, key, path, _location(line_type, path), ses.tool_calls,
                    int(delta.group(1)) if delta else None, task.group(1) if task else None,
                    ts, start,
                ))  # fmt: skip
                ses.checkpoints += 1
        if line_type == "assistant":
            sources = texts + [
                s for b in blocks if b.get("type") == "tool_use"
                for _, s in _strings(b.get("input"), "$")
            ]  # fmt: skip
            index = 0
            for source in sources:
                for block in parse_escalations(source):
                    escalations.append(_escalation_row(sid, key, index, ses.tool_calls, block, ts))
                    index += 1
            ses.escalations += index
        messages.append((
            sid, key, uuid, record.get("parentUuid") if isinstance(record.get("parentUuid"), str)
            else None, line_type, msg.get("role") if isinstance(msg.get("role"), str) else None,
            ts, record.get("isSidechain") if isinstance(record.get("isSidechain"), bool) else None,
            is_meta, is_prompt, msg.get("model") if isinstance(msg.get("model"), str) else None,
            msg.get("stop_reason") if isinstance(msg.get("stop_reason"), str) else None, text,
            n_use, n_result, source_file, line_no, raw,
        ))  # fmt: skip
    session_rows = tuple(
        (sid, s.source_file, s.first_ts, s.last_ts, s.cwd, s.git_branch, s.version,
         s.first_prompt, s.lines, s.prompts, s.tool_calls, s.checkpoints, s.escalations)
        for sid, s in sessions.items()
    )  # fmt: skip
    calls = tuple(tuple(row) for s in sessions.values() for row in s.calls.values())
    return TranscriptParse(
        source_file, tuple(messages), calls, tuple(checkpoints), tuple(escalations),
        session_rows, tuple(rejects), read, duplicates,
    )  # fmt: skip


def transcript_files(paths: Sequence[str | Path]) -> list[Path]:
    """The ``*.jsonl`` files named by ``paths`` (folders are searched recursively), sorted."""
    found: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            found += sorted(x for x in p.rglob("*.jsonl") if x.is_file())
        elif p.is_file():
            found.append(p)
        else:
            from agent_reflection.errors import ReflectionError

            raise ReflectionError(f"{p}: no such file or folder; pass transcript .jsonl files")
    return found


_INSERT = {
    "messages": "INSERT INTO messages VALUES (" + ", ".join(["?"] * 19) + ")",
    "sessions": "INSERT OR REPLACE INTO sessions VALUES (" + ", ".join(["?"] * 13) + ")",
    "tool_calls": "INSERT OR REPLACE INTO tool_calls VALUES (" + ", ".join(["?"] * 15) + ")",
    "checkpoints": "INSERT OR REPLACE INTO checkpoints VALUES (" + ", ".join(["?"] * 9) + ")",
    "escalations": "INSERT OR REPLACE INTO escalations VALUES (" + ", ".join(["?"] * 13) + ")",
}


def load_transcripts(
    con: duckdb.DuckDBPyConnection,
    paths: Sequence[str | Path],
    *,
    on_file: Callable[[Path], None] | None = None,
    encoding: str | None = None,
) -> LoadSummary:
    """Load transcript files (or folders of them); returns the reconciled summary.

    Text is decoded by :mod:`agent_reflection.load.text` (``encoding`` None: detect). A binary
    file, a line over the length limit, and the unreadable rest of a damaged file are
    rejected with their place; every line before them loads.
    """
    files = transcript_files(paths)
    origin = ", ".join(str(p) for p in paths)
    check_encoding(encoding)  # an unknown name fails before a load is recorded
    warnings: list[str] = []
    with begin_load(con, SOURCE, origin) as run:
        for path in files:
            _load_file(con, run, path, encoding, warnings)
            if on_file is not None:
                on_file(path)
        run.detail["files"] = len(files)
        if warnings:
            run.detail["warnings"] = warnings
    return run.summary()


def _load_file(
    con: duckdb.DuckDBPyConnection, run: Any, path: Path, encoding: str | None, warnings: list[str]
) -> None:
    source_file = str(path.resolve())
    with TextSource(path, encoding) as source:
        if is_binary(source.head, source.encoding):
            run.read += 1
            run.reject(source_file, source.head[:200],
                       "binary data (NUL bytes), not a transcript; check the file")  # fmt: skip
            return
        damage: list[str] = []

        def lines() -> Iterator[str | LongLine]:
            try:
                for _, line in source:
                    yield line
            except READ_ERRORS as exc:
                damage.append(f"cannot read the file past line {source.lines_read} ({exc}); "
                              "every line before it was read")  # fmt: skip

        parsed = parse_transcript(lines(), source_file)
    _write(con, run, parsed)
    for reason in damage:
        run.read += 1
        run.reject(f"{source_file}:{source.lines_read + 1}", None, reason)
    if source.fallback is not None:
        warnings.append(source.fallback.note(path))


def _write(con: duckdb.DuckDBPyConnection, run: Any, parsed: TranscriptParse) -> None:
    run.read += parsed.lines_read
    for rej in parsed.rejects:
        run.reject(f"{parsed.source_file}:{rej.line_no}", rej.raw, rej.reason)
    sids = sorted({row[0] for row in parsed.messages})
    present: set[tuple[str, str]] = set()
    if sids:
        rows = con.execute(
            "SELECT session_id, record_key FROM messages WHERE session_id IN (SELECT unnest(?))",
            [sids],
        ).fetchall()
        present = {(r[0], r[1]) for r in rows}
    new = [(*m, run.load_id) for m in parsed.messages if (m[0], m[1]) not in present]
    run.already_present += len(parsed.messages) - len(new) + parsed.duplicates
    run.loaded += len(new)
    con.execute("BEGIN")
    try:
        if new:
            con.executemany(_INSERT["messages"], new)
        for table in ("sessions", "tool_calls", "checkpoints", "escalations"):
            rows = getattr(parsed, table)
            if rows:
                con.executemany(_INSERT[table], [list(r) for r in rows])
        run.checkpoint()  # this file's rows, its rejects and the counts commit together
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
