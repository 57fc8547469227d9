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
from dataclasses import dataclass, field, fields
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple

import duckdb

from agent_reflection.in_loop.cadence import CHECKPOINT_FLAG
from agent_reflection.in_loop.escalation_contract import (
    Block,
    parse_escalations,
    validate_terminal,
    validate_trigger,
)
from agent_reflection.load.files import FoundFiles, find_files
from agent_reflection.load.text import (
    READ_ERRORS,
    LongLine,
    TextSource,
    check_encoding,
    is_binary,
    read_error,
)
from agent_reflection.names import name_text
from agent_reflection.redact import Redactor, database_redactor
from agent_reflection.store.db import (
    LoadSummary,
    begin_load,
    nothing_to_read,
    read_sql,
    transaction,
)

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

    def note_line(self, record: dict[str, Any], ts: str | None, content: _Content) -> None:
        """Count a new line: its time, the first cwd/branch/version seen, a prompt."""
        self.lines += 1
        if ts:
            self.first_ts = self.first_ts or ts
            self.last_ts = ts
        for attr, name in (("cwd", "cwd"), ("git_branch", "gitBranch"), ("version", "version")):
            if getattr(self, attr) is None and isinstance(record.get(name), str):
                setattr(self, attr, record[name])
        if content.is_prompt:
            self.prompts += 1
            self.task_calls = 0
            self.first_prompt = self.first_prompt or content.text

    def add_tool_calls(
        self, sid: str, uuid: str | None, ts: str | None, blocks: list[dict[str, Any]]
    ) -> None:
        """A ``tool_calls`` row (result still empty) for each tool_use block with an id."""
        for b in blocks:
            if b.get("type") == "tool_use" and isinstance(b.get("id"), str):
                self.tool_calls += 1
                self.task_calls += 1
                command, path = _tool_target(b.get("input"))
                self.calls[b["id"]] = [
                    sid,
                    b["id"],
                    self.tool_calls,
                    self.prompts,
                    self.task_calls,
                    uuid,
                    str(b.get("name") or "?"),
                    json.dumps(b.get("input")),
                    command,
                    path,
                    ts,
                    None,
                    None,
                    None,
                    None,
                ]

    def attach_results(
        self, uuid: str | None, ts: str | None, blocks: list[dict[str, Any]]
    ) -> None:
        """Fill in the result columns of the calls that tool_result blocks answer."""
        for b in blocks:
            if b.get("type") == "tool_result" and b.get("tool_use_id") in self.calls:
                row = self.calls[b["tool_use_id"]]
                row[11:15] = [
                    uuid,
                    _result_text(b.get("content"))[:RESULT_TEXT_LIMIT],
                    bool(b.get("is_error")),
                    ts,
                ]

    def row(self, sid: str) -> tuple[Any, ...]:
        """The ``sessions`` row: the id, then the fields in their order (the columns of
        ``sql/transcripts/insert_sessions.sql``) less the running ``task_calls`` and ``calls``."""
        kept = (f.name for f in fields(self) if f.name not in ("task_calls", "calls"))
        return (sid, *(getattr(self, name) for name in kept))


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
        sid,
        key,
        index,
        seq,
        block.status or None,
        block.attempt,
        _band(block.attempt),
        list(block.failure_layers),
        not validate_trigger(block),
        not problems,
        list(problems),
        ts,
        block.raw,
    )


class _Line(NamedTuple):
    """One JSON line that passed the checks: its text, object, type and message (or ``{}``).

    The per-line values are named tuples, not frozen dataclasses: they are built about twice
    as fast, and every line of a file builds them.
    """

    raw: str
    record: dict[str, Any]
    line_type: str
    message: dict[str, Any]


class _Content(NamedTuple):
    """What the message blocks of one line say, for the message row and the session counts."""

    blocks: list[dict[str, Any]]
    texts: list[str]
    text: str | None  # the text blocks joined by newlines
    is_meta: bool
    is_prompt: bool
    n_use: int
    n_result: int


def _read_line(line_no: int, raw_line: str | LongLine, redactor: Redactor) -> _Line | Reject | None:
    """The checked line, the reason it is rejected, or None for a blank line (not counted).

    Secrets are redacted from the line's text before it is parsed (JSON stays valid, see
    :mod:`agent_reflection.redact`): every column and table built from it is redacted.
    """
    if isinstance(raw_line, LongLine):
        return Reject(line_no, redactor.text(raw_line.head), raw_line.reason())
    raw = redactor.text(raw_line.rstrip("\n"))  # a CRLF line keeps its "\r": same key
    if not raw.strip():
        return None
    try:
        record = json.loads(raw)
    except ValueError as exc:
        return Reject(line_no, raw, f"not JSON ({exc}); each line must be one object")
    if not isinstance(record, dict):
        return Reject(line_no, raw, f"a JSON {type(record).__name__}, not an object")
    line_type = record.get("type")
    if not isinstance(line_type, str) or not line_type:
        return Reject(line_no, raw, "no 'type' field; every line is tagged by type")
    message = record.get("message")
    if line_type in ("user", "assistant") and not isinstance(message, dict):
        return Reject(line_no, raw, f"{line_type} line without a 'message' object")
    return _Line(raw, record, line_type, message if isinstance(message, dict) else {})


def _content(line: _Line) -> _Content:
    """The blocks of the line's message, its text, and whether it is a real user prompt."""
    blocks = _blocks(line.message)
    is_meta = bool(line.record.get("isMeta")) or bool(line.record.get("isCompactSummary"))
    n_result = sum(1 for b in blocks if b.get("type") == "tool_result")
    texts = [str(b.get("text", "")) for b in blocks if b.get("type") == "text"]
    return _Content(
        blocks=blocks,
        texts=texts,
        text="\n".join(texts) if texts else None,
        is_meta=is_meta,
        is_prompt=line.line_type == "user" and not is_meta and n_result == 0 and bool(texts),
        n_use=sum(1 for b in blocks if b.get("type") == "tool_use"),
        n_result=n_result,
    )


def _optional(mapping: dict[str, Any], key: str, kind: type) -> Any:
    """``mapping[key]`` if it is a ``kind``, else None (the format changes between versions)."""
    value = mapping.get(key)
    return value if isinstance(value, kind) else None


def _message_row(
    sid: str,
    key: str,
    uuid: str | None,
    line: _Line,
    content: _Content,
    ts: str | None,
    source_file: str,
    line_no: int,
) -> tuple[Any, ...]:
    """The ``messages`` row of one line (without the load id, added when it is written)."""
    record, msg = line.record, line.message
    return (
        sid,
        key,
        uuid,
        _optional(record, "parentUuid", str),
        line.line_type,
        _optional(msg, "role", str),
        ts,
        _optional(record, "isSidechain", bool),
        content.is_meta,
        content.is_prompt,
        _optional(msg, "model", str),
        _optional(msg, "stop_reason", str),
        content.text,
        content.n_use,
        content.n_result,
        source_file,
        line_no,
        line.raw,
    )


def _checkpoint_rows(
    sid: str, key: str, line: _Line, after_seq: int, ts: str | None
) -> list[tuple[Any, ...]]:
    """A ``checkpoints`` row for each distinct string of the line holding our prompt."""
    rows: list[tuple[Any, ...]] = []
    seen_texts: set[str] = set()
    for path, value in _strings(line.record, "$"):
        if CHECKPOINT_FLAG in value and value not in seen_texts:
            seen_texts.add(value)
            start = value[value.index(CHECKPOINT_FLAG) :]
            delta = _DELTA.search(start)
            task = _TASK.search(start)
            rows.append(
                (
                    sid,
                    key,
                    path,
                    _location(line.line_type, path),
                    after_seq,
                    int(delta.group(1)) if delta else None,
                    task.group(1) if task else None,
                    ts,
                    start,
                )
            )
    return rows


def _escalation_rows(
    sid: str, key: str, content: _Content, after_seq: int, ts: str | None
) -> list[tuple[Any, ...]]:
    """An ``escalations`` row for each block in an assistant line's text or tool inputs."""
    sources = content.texts + [
        s
        for b in content.blocks
        if b.get("type") == "tool_use"
        for _, s in _strings(b.get("input"), "$")
    ]
    blocks = [block for source in sources for block in parse_escalations(source)]
    return [
        _escalation_row(sid, key, index, after_seq, block, ts) for index, block in enumerate(blocks)
    ]


@dataclass
class _FileParse:
    """The rows of one transcript file gathered line by line (state of :func:`parse_transcript`)."""

    source_file: str
    file_session: str | None = None
    sessions: dict[str, _Session] = field(default_factory=dict)
    messages: list[tuple[Any, ...]] = field(default_factory=list)
    checkpoints: list[tuple[Any, ...]] = field(default_factory=list)
    escalations: list[tuple[Any, ...]] = field(default_factory=list)
    rejects: list[Reject] = field(default_factory=list)
    seen_keys: set[tuple[str, str]] = field(default_factory=set)
    read: int = 0
    duplicates: int = 0

    def session_id(self, record: dict[str, Any]) -> str:
        """The line's sessionId; else the file's first one; else the file name's stem."""
        sid = record.get("sessionId")
        if isinstance(sid, str) and sid:
            self.file_session = self.file_session or sid
            return sid
        return self.file_session or Path(self.source_file).name.split(".")[0]

    def add(self, line_no: int, line: _Line) -> None:
        """Every row one checked line gives, and its counts in its session."""
        sid = self.session_id(line.record)
        uuid = line.record.get("uuid") if isinstance(line.record.get("uuid"), str) else None
        key = uuid or "sha256:" + hashlib.sha256(line.raw.encode("utf-8")).hexdigest()
        if (sid, key) in self.seen_keys:  # the same line twice: already present, not new
            self.duplicates += 1
            return
        self.seen_keys.add((sid, key))
        ses = self.sessions.setdefault(sid, _Session(self.source_file))
        ts = _ts(line.record.get("timestamp"))
        content = _content(line)
        ses.note_line(line.record, ts, content)
        if line.line_type == "assistant":
            ses.add_tool_calls(sid, uuid, ts, content.blocks)
        ses.attach_results(uuid, ts, content.blocks)
        checkpoints = _checkpoint_rows(sid, key, line, ses.tool_calls, ts)
        self.checkpoints += checkpoints
        ses.checkpoints += len(checkpoints)
        if line.line_type == "assistant":
            escalations = _escalation_rows(sid, key, content, ses.tool_calls, ts)
            self.escalations += escalations
            ses.escalations += len(escalations)
        self.messages.append(
            _message_row(sid, key, uuid, line, content, ts, self.source_file, line_no)
        )

    def result(self) -> TranscriptParse:
        """The rows gathered, as a :class:`TranscriptParse`."""
        calls = tuple(tuple(row) for s in self.sessions.values() for row in s.calls.values())
        return TranscriptParse(
            self.source_file,
            tuple(self.messages),
            calls,
            tuple(self.checkpoints),
            tuple(self.escalations),
            tuple(s.row(sid) for sid, s in self.sessions.items()),
            tuple(self.rejects),
            self.read,
            self.duplicates,
        )


def parse_transcript(
    lines: Iterable[str | LongLine], source_file: str, redactor: Redactor | None = None
) -> TranscriptParse:
    """Rows for every table from the lines of one transcript file (pure).

    A :class:`~agent_reflection.load.text.LongLine` (over the length limit) is rejected.
    ``redactor``: the database's (default: redaction with the public key).
    """
    redactor = redactor or Redactor()
    parse = _FileParse(source_file)
    for line_no, raw_line in enumerate(lines, start=1):
        line = _read_line(line_no, raw_line, redactor)
        if line is None:
            continue
        parse.read += 1
        if isinstance(line, Reject):
            parse.rejects.append(line)
        else:
            parse.add(line_no, line)
    return parse.result()


def transcript_files(paths: Sequence[str | Path]) -> FoundFiles:
    """The ``*.jsonl`` files named by ``paths`` (folders are searched recursively, see
    :mod:`agent_reflection.load.files`), sorted, and the paths refused."""
    from agent_reflection.errors import ReflectionError

    return find_files(
        paths,
        lambda _top, path: path.name.endswith(".jsonl"),
        lambda p: ReflectionError(f"{p}: no such file or folder; pass transcript .jsonl files"),
    )


#: Tables written per file, in order: ``messages`` (only new lines) first, then the derived ones.
#: Each table derived from a transcript's messages, and the file inserting its rows.
_DERIVED_TABLES = (
    ("sessions", "transcripts/insert_sessions.sql"),
    ("tool_calls", "transcripts/insert_tool_calls.sql"),
    ("checkpoints", "transcripts/insert_checkpoints.sql"),
    ("escalations", "transcripts/insert_escalations.sql"),
)


def load_transcripts(
    con: duckdb.DuckDBPyConnection,
    paths: Sequence[str | Path],
    *,
    on_file: Callable[[Path], None] | None = None,
    encoding: str | None = None,
    redact: bool = True,
) -> LoadSummary:
    """Load transcript files (or folders of them); returns the reconciled summary.

    Text is decoded by :mod:`agent_reflection.load.text` (``encoding`` None: detect). A binary
    file, a line over the length limit, and the unreadable rest of a damaged file are
    rejected with their place; every line before them loads. Secrets are redacted
    (:mod:`agent_reflection.redact`) unless ``redact`` is False.
    """
    found = transcript_files(paths)
    files = found.files
    origin = ", ".join(str(p) for p in paths)
    check_encoding(encoding)  # an unknown name fails before a load is recorded
    with begin_load(con, SOURCE, origin, fail_if_all_rejected=True) as run:
        run.redactor = database_redactor(con, enabled=redact)
        for path, reason in found.refused:
            run.read += 1
            run.reject(str(path), None, reason)
        for path in files:
            _load_file(con, run, path, encoding)
            if on_file is not None:
                on_file(path)
        run.detail["files"] = len(files)
    return run.summary()


def _load_file(con: duckdb.DuckDBPyConnection, run: Any, path: Path, encoding: str | None) -> None:
    source_file = name_text(path.resolve())
    with TextSource(path, encoding) as source:
        if is_binary(source.head, source.encoding):
            run.read += 1
            run.reject(
                source_file,
                source.head[:200],
                "binary data (NUL bytes), not a transcript; check the file",
                file_error=True,
            )
            return
        damage: list[str] = []

        def lines() -> Iterator[str | LongLine]:
            try:
                for _, line in source:
                    yield line
            except READ_ERRORS as exc:
                damage.append(read_error(exc, source.lines_read, "line"))

        parsed = parse_transcript(lines(), source_file, run.redactor)
    _write(con, run, parsed)
    for reason in damage:
        run.read += 1
        run.reject(f"{source_file}:{source.lines_read + 1}", None, reason, file_error=True)
    if source.fallback is not None:
        run.warn(source.fallback.note(path))
    if not parsed.lines_read and not damage:
        run.warn(nothing_to_read(path))


def _write(con: duckdb.DuckDBPyConnection, run: Any, parsed: TranscriptParse) -> None:
    run.read += parsed.lines_read
    for rej in parsed.rejects:
        run.reject(f"{parsed.source_file}:{rej.line_no}", rej.raw, rej.reason)
    sids = sorted({row[0] for row in parsed.messages})
    present: set[tuple[str, str]] = set()
    if sids:
        rows = con.execute(
            read_sql("transcripts/present_keys.sql"), {"session_ids": sids}
        ).fetchall()
        present = {(r[0], r[1]) for r in rows}
    new = [(*m, run.load_id) for m in parsed.messages if (m[0], m[1]) not in present]
    run.already_present += len(parsed.messages) - len(new) + parsed.duplicates
    run.loaded += len(new)
    with transaction(con):
        if new:
            con.executemany(read_sql("transcripts/insert_messages.sql"), new)
        for table, insert in _DERIVED_TABLES:
            rows = getattr(parsed, table)
            if rows:
                con.executemany(read_sql(insert), [list(r) for r in rows])
        run.checkpoint()  # this file's rows, its rejects and the counts commit together
