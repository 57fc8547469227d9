"""Other tools' AI attribution notes: git-ai (``refs/notes/ai``) and whogitit.

Both tools attach to a commit a git note saying which lines of which files an AI session wrote:

- git-ai writes an *authorship log* (Git AI Standard v3.0.0, ``schema_version``
  ``authorship/3.0.0``): an attestation section (a file path, then lines ``  <key> <ranges>``),
  a line ``---``, and a JSON metadata section whose ``sessions`` / ``prompts`` / ``humans``
  records the keys point to (:func:`parse_git_ai_note`);
- whogitit writes one JSON object (``version`` 3, or ``schema_version`` 2 before) with the
  Claude Code session, its model and every attributed line of every file
  (:func:`parse_whogitit_note`).

:func:`load_ai_notes` reads every note under each ref in two git processes (``git notes list``,
one ``git cat-file --batch``), only when the ref's commit changed since the last load, and only
the notes whose blob it has not read. Each note becomes one ``ai_notes`` row and its AI line
ranges ``ai_line_attributions`` rows; a note that does not follow its format lands in
``rejected`` (location ``<ref>:<repo>@<sha>#<field>``) and never stops the load.
:func:`apply_agents` then sets ``commits.agent`` and ``commits.agent_source``: a note that
attributes at least one line to an AI session beats the message patterns of
:mod:`agent_reflection.load.git.agents`. docs/git.md, "AI attribution notes", says which
versions and fields are read, with their sources.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from agent_reflection.load.git.agents import AGENT_PATTERNS, identity, match_agent
from agent_reflection.load.git.notes import GIT_AI_REF as GIT_AI_REF
from agent_reflection.load.git.notes import WHOGITIT_REF as WHOGITIT_REF
from agent_reflection.load.git.notes import list_notes, notes_tip, read_blobs
from agent_reflection.load.git.repo import open_repo
from agent_reflection.names import lone_surrogate
from agent_reflection.store.db import (
    LoadSummary,
    begin_load,
    pandas_deferred,
    read_sql,
    transaction,
)

if TYPE_CHECKING:
    import os

    import duckdb

    from agent_reflection.load.git.repo import GitSource
    from agent_reflection.redact import Redactor

SOURCE = "ai-notes"
#: The only authorship-log version git-ai has written since its notes moved to refs/notes/ai.
GIT_AI_SCHEMA = "authorship/3.0.0"
#: whogitit's note versions read: 2 (``schema_version``, ``source`` a string) and 3
#: (``version``, ``source`` an object ``{"type": ...}``).
WHOGITIT_VERSIONS = (2, 3)

NoteSource = Literal["git-ai-note", "whogitit-note"]
#: ref -> the ``agent_source`` / ``ai_notes.source`` value of its notes, in precedence order
#: (a commit annotated by both tools takes git-ai's agent).
NOTE_REFS: dict[str, NoteSource] = {GIT_AI_REF: "git-ai-note", WHOGITIT_REF: "whogitit-note"}

#: git-ai's ``agent_id.tool`` values that name an agent of ``commits.agent`` under another
#: name; any other tool is stored lower-cased as the note names it (``windsurf``, ``gemini``).
TOOL_AGENTS: Mapping[str, str] = {
    "claude": "claude-code",
    "claude-code": "claude-code",
    "copilot": "copilot",
    "github-copilot": "copilot",
    "github-copilot-cli": "copilot",
    "copilot-cli": "copilot",
    "codex": "codex",
    "codex-cli": "codex",
    "cursor": "cursor",
    "cursor-agent": "cursor",
    "devin": "devin",
    "aider": "aider",
    "jules": "jules",
    "openhands": "openhands",
    "amp": "amp",
    "opencode": "opencode",
}
#: whogitit captures Claude Code sessions only (its hooks are Claude Code's).
WHOGITIT_TOOL = "claude-code"

#: ``agent_source`` of each pattern row (identity | trailer | subject).
_PATTERN_WHERE = {row.name: row.where for row in AGENT_PATTERNS}
#: One range of a line range specification: ``42`` or ``19-222`` (spec §1.2.3).
_RANGE = re.compile(r"^([0-9]+)(?:-([0-9]+))?$")


@dataclass(frozen=True)
class LineRange:
    """Lines ``start_line``..``end_line`` (1-based, inclusive) of ``path`` written by an AI
    session, as numbered in the annotated commit's version of the file."""

    path: str
    start_line: int
    end_line: int
    agent: str
    tool: str
    model: str | None
    session_id: str | None
    kind: str = "ai"  # ai | ai-modified (whogitit: an AI line a human then edited)

    @property
    def lines(self) -> int:
        return self.end_line - self.start_line + 1


@dataclass(frozen=True)
class NoteAttribution:
    """What one valid note says: its AI line ranges and the commit's agent (the one with most
    lines; None when the note attributes no line to an AI session)."""

    ranges: tuple[LineRange, ...]
    agent: str | None
    tool: str | None
    model: str | None
    unresolved_keys: int = 0  # attestation keys with no metadata record (git-ai)

    @property
    def ai_lines(self) -> int:
        return sum(r.lines for r in self.ranges)


@dataclass(frozen=True)
class NoteProblem:
    """Why a note is not in its format: ``field`` locates it (a JSON pointer into the metadata,
    or ``attestation line N``)."""

    field: str
    reason: str


def agent_name(tool: str) -> str:
    """The ``commits.agent`` name of a note's tool (:data:`TOOL_AGENTS`, else lower-cased)."""
    key = tool.strip().lower()
    return TOOL_AGENTS.get(key, key)


def _attribution(ranges: list[LineRange], unresolved: int = 0) -> NoteAttribution:
    """The note's commit agent: most lines wins; a tie goes to the first name in sort order."""
    if not ranges:
        return NoteAttribution((), None, None, None, unresolved)
    lines: Counter[str] = Counter()
    for r in ranges:
        lines[r.agent] += r.lines
    agent = min(lines, key=lambda name: (-lines[name], name))
    first = max((r for r in ranges if r.agent == agent), key=lambda r: r.lines)
    return NoteAttribution(tuple(ranges), agent, first.tool, first.model, unresolved)


def _parse_ranges(spec: str) -> list[tuple[int, int]] | None:
    """``1-4,9,12-20`` as (start, end) pairs; None when it is not a range specification."""
    pairs = []
    for part in spec.split(","):
        hit = _RANGE.match(part)
        if hit is None:
            return None
        start = int(hit[1])
        end = int(hit[2]) if hit[2] is not None else start
        if start < 1 or end < start:
            return None
        pairs.append((start, end))
    return pairs


def _unquote_path(line: str) -> str:
    """A file path line; paths with spaces, tabs or newlines are double-quoted (§1.2.3)."""
    if len(line) >= 2 and line.startswith('"') and line.endswith('"'):
        try:
            value = json.loads(line)
        except ValueError:
            return line[1:-1]
        return value if isinstance(value, str) else line[1:-1]
    return line


def _agent_record(
    meta: Mapping[str, Any], table: str, key: str
) -> tuple[str, str | None, str | None] | NoteProblem | None:
    """(tool, model, conversation id) of ``meta[table][key]``; None when there is no such
    record; a problem when the record has no ``agent_id.tool``."""
    records = meta.get(table) or {}
    record = records.get(key)
    if record is None:
        return None
    where = f"#/{table}/{key}/agent_id"
    agent_id = record.get("agent_id") if isinstance(record, dict) else None
    if not isinstance(agent_id, dict):
        return NoteProblem(where, "want an object agent_id {tool, id, model} (spec §1.2.4)")
    tool = agent_id.get("tool")
    if not isinstance(tool, str) or not tool.strip():
        return NoteProblem(f"{where}/tool", "want the AI tool's name, a non-empty string")
    model, conversation = agent_id.get("model"), agent_id.get("id")
    return (
        tool,
        model if isinstance(model, str) and model else None,
        conversation if isinstance(conversation, str) and conversation else None,
    )


def parse_git_ai_note(text: str) -> NoteAttribution | NoteProblem:
    """A git-ai authorship log (Git AI Standard v3.0.0, §1.2) read into its AI line ranges.

    Keys route by prefix (§1.2.3.1): ``s_<id>::t_<trace>`` to ``sessions[s_<id>]``, ``h_`` to
    ``humans`` (known human lines: not AI, not stored), any other key to the legacy
    ``prompts``. A key with no record is counted (``unresolved_keys``) and its lines left
    out; a malformed line, range or record rejects the note.
    """
    lines = text.split("\n")
    try:
        divider = lines.index("---")
    except ValueError:
        return NoteProblem(
            "#", "not a git-ai authorship log: no divider line '---' (Git AI Standard §1.2.2)"
        )
    try:
        meta = json.loads("\n".join(lines[divider + 1 :]))
    except (ValueError, RecursionError) as exc:
        return NoteProblem("#/metadata", f"metadata section is not JSON ({exc})")
    if not isinstance(meta, dict):
        return NoteProblem("#/metadata", "metadata section is not a JSON object")
    version = meta.get("schema_version")
    if version != GIT_AI_SCHEMA:
        return NoteProblem(
            "#/schema_version",
            f"unsupported schema_version {version!r}: this package reads {GIT_AI_SCHEMA!r}",
        )
    for table in ("prompts", "sessions", "humans"):
        if table in meta and not isinstance(meta[table], dict | None):
            return NoteProblem(f"#/{table}", "want an object keyed by attestation key")
    if not isinstance(meta.get("prompts"), dict):
        return NoteProblem("#/prompts", "missing: the spec requires a prompts object (§1.2.4)")
    ranges: list[LineRange] = []
    unresolved = 0
    path: str | None = None
    for number, line in enumerate(lines[:divider], start=1):
        if not line.strip():
            continue
        if not line[0].isspace():
            path = _unquote_path(line)
            continue
        where = f"#attestation line {number}"
        if not line.startswith("  ") or line[2].isspace():
            return NoteProblem(where, "an entry is indented by exactly two spaces (§1.2.3)")
        if path is None:
            return NoteProblem(where, "an entry before any file path")
        key, _, spec = line[2:].partition(" ")
        pairs = _parse_ranges(spec)
        if not key or pairs is None:
            return NoteProblem(
                where, f"want '<key> <ranges>' like 'abcd1234abcd1234 1-4,9', got {line.strip()!r}"
            )
        if key.startswith("h_"):
            continue  # a known human's lines
        table, record_key = (
            ("sessions", key.split("::")[0]) if key.startswith("s_") else ("prompts", key)
        )
        found = _agent_record(meta, table, record_key)
        if isinstance(found, NoteProblem):
            return found
        if found is None:
            unresolved += 1
            continue
        tool, model, conversation = found
        agent = agent_name(tool)
        ranges.extend(
            LineRange(path, start, end, agent, tool, model, conversation) for start, end in pairs
        )
    return _attribution(ranges, unresolved)


def _runs(numbers: Iterable[int]) -> list[tuple[int, int]]:
    """Sorted line numbers as runs of consecutive lines."""
    runs: list[tuple[int, int]] = []
    for n in sorted(set(numbers)):
        if runs and n == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], n)
        else:
            runs.append((n, n))
    return runs


#: whogitit's line sources read as AI lines, and the ``kind`` stored for them.
_WHOGITIT_KINDS = {"AI": "ai", "AIModified": "ai-modified"}


def parse_whogitit_note(text: str) -> NoteAttribution | NoteProblem:
    """A whogitit note (``AIAttribution``, versions 2 and 3) read into its AI line ranges:
    lines whose source is ``AI`` or ``AIModified``, merged into runs of consecutive lines."""
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError) as exc:
        return NoteProblem("#", f"not a whogitit note: invalid JSON ({exc})")
    if not isinstance(doc, dict):
        return NoteProblem("#", "not a whogitit note: want a JSON object")
    version = doc.get("version", doc.get("schema_version"))
    if version not in WHOGITIT_VERSIONS:
        return NoteProblem(
            "#/version",
            f"unsupported whogitit version {version!r}: this package reads {WHOGITIT_VERSIONS}",
        )
    session = doc.get("session")
    if not isinstance(session, dict):
        return NoteProblem("#/session", "want the session object")
    model_obj = session.get("model")
    model = model_obj.get("id") if isinstance(model_obj, dict) else None
    session_id = session.get("session_id")
    files = doc.get("files")
    if not isinstance(files, list):
        return NoteProblem("#/files", "want a list of files")
    ranges: list[LineRange] = []
    for i, entry in enumerate(files):
        if not isinstance(entry, dict) or not isinstance(entry.get("path"), str):
            return NoteProblem(f"#/files/{i}/path", "want the file's path, a string")
        found: dict[str, list[int]] = {}
        lines = entry.get("lines")
        if not isinstance(lines, list):
            return NoteProblem(f"#/files/{i}/lines", "want a list of lines")
        for j, line in enumerate(lines):
            where = f"#/files/{i}/lines/{j}"
            if not isinstance(line, dict):
                return NoteProblem(where, "want a line object")
            number = line.get("line_number")
            if not isinstance(number, int) or isinstance(number, bool) or number < 1:
                return NoteProblem(f"{where}/line_number", "want a positive integer")
            source = line.get("source")
            kind = source.get("type") if isinstance(source, dict) else source
            if not isinstance(kind, str):
                return NoteProblem(f"{where}/source", "want a line source (AI, Human, ...)")
            if kind in _WHOGITIT_KINDS:
                found.setdefault(_WHOGITIT_KINDS[kind], []).append(number)
        for kind, numbers in sorted(found.items()):
            ranges.extend(
                LineRange(
                    entry["path"],
                    start,
                    end,
                    agent_name(WHOGITIT_TOOL),
                    WHOGITIT_TOOL,
                    model if isinstance(model, str) else None,
                    session_id if isinstance(session_id, str) else None,
                    kind,
                )
                for start, end in _runs(numbers)
            )
    return _attribution(ranges)


def parse_note(source: NoteSource, data: bytes) -> NoteAttribution | NoteProblem:
    """A note of either tool."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return NoteProblem("#", f"not UTF-8 text ({exc})")
    found = parse_git_ai_note(text) if source == "git-ai-note" else parse_whogitit_note(text)
    if isinstance(found, NoteAttribution):
        for r in found.ranges:
            bad = lone_surrogate([r.path, r.agent, r.tool, r.model, r.session_id])
            if bad is not None:  # an escape like "\udce9": JSON, but not text
                return NoteProblem("#", f"a lone surrogate escape in the lines of {r.path!r}")
    return found


def load_ai_notes(
    con: duckdb.DuckDBPyConnection,
    repo_path: str | os.PathLike[str] | GitSource,
    *,
    name: str | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    tips: Mapping[str, str] | None = None,
) -> list[LoadSummary]:
    """Load the repo's git-ai and whogitit notes, then set ``commits.agent`` and
    ``agent_source`` (:func:`apply_agents`, also when the repo has no such notes). One
    summary per notes ref present; ``read`` counts notes. The history must be loaded under
    the same ``name``. ``tips``: the notes refs' commits as the git load read them (its
    ``detail["notes_tips"]``), instead of asking git (see :func:`.notes.notes_tip`)."""
    source = open_repo(repo_path, name=name, cache_dir=cache_dir)
    with pandas_deferred():  # DuckDB's parameter binding would import pandas (0.3 s)
        summaries = [
            summary
            for ref, note_source in NOTE_REFS.items()
            if (summary := _load_ref(con, source, ref, note_source, tips)) is not None
        ]
        changed = apply_agents(con, source.name)
    if summaries:
        summaries[-1].detail["commits_agent_changed"] = changed
    return summaries


def _load_ref(
    con: duckdb.DuckDBPyConnection,
    source: GitSource,
    ref: str,
    note_source: NoteSource,
    tips: Mapping[str, str] | None,
) -> LoadSummary | None:
    """Read the notes under ``ref`` not read before; None when the repo has no such ref."""
    tip = notes_tip(source, ref, tips)
    if tip is None:
        return None
    repo = source.name
    with begin_load(con, SOURCE, f"{source.origin} {ref}") as run:
        run.detail.update(repo=repo, ref=ref, tip=tip)
        recorded = con.execute(read_sql("notes/tip.sql"), {"repo": repo, "ref": ref}).fetchone()
        if recorded is not None and recorded[0] == tip:
            run.detail.update(notes=0, notes_skipped="tip unchanged since the last load")
            return run.summary()
        known = dict(
            con.execute(read_sql("git/ai_notes_known.sql"), {"repo": repo, "ref": ref}).fetchall()
        )
        pairs = {commit: blob for blob, commit in list_notes(source, ref)}
        fresh = sorted(commit for commit, blob in pairs.items() if known.get(commit) != blob)
        gone = sorted(set(known) - set(pairs))
        blobs = read_blobs(source, sorted({pairs[commit] for commit in fresh}))
        run.already_present = len(pairs) - len(fresh)
        run.read = len(pairs)
        notes: list[tuple[str, str, str, str | None, str | None, str | None, int]] = []
        ranges: list[tuple[str, LineRange]] = []
        unresolved = 0
        redactor: Redactor | None = None
        for commit in fresh:
            blob = pairs[commit]
            where = f"{ref}:{repo}@{commit}"
            data = blobs.get(blob)
            parsed = (
                parse_note(note_source, data)
                if data is not None
                else NoteProblem("#", f"note blob {blob} is missing: re-fetch {ref}")
            )
            if isinstance(parsed, NoteProblem):
                # whogitit notes hold the prompts' text: a rejected note's bytes are redacted
                # (the redactor and the sidecar rows are imported only then: 20 ms of regexes)
                from agent_reflection.load.sidecars.rows import RAW_PREFIX_BYTES
                from agent_reflection.redact import database_redactor

                redactor = redactor or database_redactor(con)
                raw = redactor.bytes(data)[:RAW_PREFIX_BYTES] if data is not None else None
                run.reject(f"{where}{parsed.field}", raw, parsed.reason)
                notes.append((commit, blob, "rejected", None, None, None, 0))
                continue
            run.loaded += 1
            unresolved += parsed.unresolved_keys
            notes.append(
                (commit, blob, "ok", parsed.agent, parsed.tool, parsed.model, parsed.ai_lines)
            )
            ranges.extend((commit, r) for r in parsed.ranges)
        run.detail.update(
            notes=len(pairs),
            notes_read=len(fresh),
            notes_removed=len(gone),
            line_ranges=len(ranges),
            unresolved_keys=unresolved,
        )
        with transaction(con):
            _write(con, repo, ref, note_source, fresh + gone, notes, ranges, run.load_id)
            con.execute(
                read_sql("notes/save_tip.sql"),
                {"repo": repo, "ref": ref, "sha": tip, "load_id": run.load_id},
            )
            run.checkpoint()
    return run.summary()


def _write(
    con: duckdb.DuckDBPyConnection,
    repo: str,
    ref: str,
    note_source: NoteSource,
    replaced: list[str],
    notes: list[tuple[str, str, str, str | None, str | None, str | None, int]],
    ranges: list[tuple[str, LineRange]],
    load_id: int,
) -> None:
    """Replace the rows of the ``replaced`` commits by ``notes`` and ``ranges``."""
    if replaced:
        con.execute(
            read_sql("git/ai_notes_delete.sql"), {"repo": repo, "ref": ref, "shas": replaced}
        )
        con.execute(
            read_sql("git/ai_line_attributions_delete.sql"),
            {"repo": repo, "source": note_source, "shas": replaced},
        )
    if notes:
        shas, blobs, statuses, agents, tools, models, ai_lines = map(list, zip(*notes, strict=True))
        con.execute(
            read_sql("git/ai_notes_insert.sql"),
            {
                "repo": repo,
                "ref": ref,
                "source": note_source,
                "shas": shas,
                "note_blobs": blobs,
                "statuses": statuses,
                "agents": agents,
                "tools": tools,
                "models": models,
                "ai_lines": ai_lines,
                "load_id": load_id,
            },
        )
    if ranges:
        con.execute(
            read_sql("git/ai_line_attributions_insert.sql"),
            {
                "repo": repo,
                "source": note_source,
                "load_id": load_id,
                "shas": [sha for sha, _ in ranges],
                "paths": [r.path for _, r in ranges],
                "start_lines": [r.start_line for _, r in ranges],
                "end_lines": [r.end_line for _, r in ranges],
                "agents": [r.agent for _, r in ranges],
                "tools": [r.tool for _, r in ranges],
                "models": [r.model for _, r in ranges],
                "session_ids": [r.session_id for _, r in ranges],
                "kinds": [r.kind for _, r in ranges],
            },
        )


def decide_agent(
    subject: str,
    body: str,
    author: str,
    committer: str,
    note_agent: str | None,
    note_source: str | None,
) -> tuple[str | None, str | None]:
    """(``commits.agent``, ``commits.agent_source``) of one commit: a note's agent, else the
    first matching pattern row and where it looked, else (None, None)."""
    if note_agent is not None:
        return note_agent, note_source
    found = match_agent(subject, body, author, committer)
    if found is None:
        return None, None
    return found.agent, _PATTERN_WHERE[found.pattern]


def apply_agents(con: duckdb.DuckDBPyConnection, repo: str) -> int:
    """Set ``agent`` and ``agent_source`` of ``repo``'s commits from its valid notes and the
    pattern table; returns how many rows changed. Reads only commits with a mark, a recorded
    source or a note, so a repository without notes costs one query."""
    rows = con.execute(read_sql("git/ai_agents_candidates.sql"), {"repo": repo}).fetchall()
    changes: list[tuple[str, str | None, str | None]] = []
    for sha, subject, body, an, ae, cn, ce, agent, agent_source, note_agent, note_src in rows:
        decided = decide_agent(
            subject, body, identity(an, ae), identity(cn, ce), note_agent, note_src
        )
        if decided != (agent, agent_source):
            changes.append((sha, *decided))
    if changes:
        shas, agents, sources = map(list, zip(*changes, strict=True))
        con.execute(
            read_sql("git/ai_agents_update.sql"),
            {"repo": repo, "shas": shas, "agents": agents, "sources": sources},
        )
    return len(changes)
