"""The self-report instructions: what the agent is asked to write, where, and in what shape.

One home for the words, used two ways:

- **the CLAUDE.md block** (the default of ``reflect hook install``): a marked block in the
  project's memory file that Claude Code loads into every session, telling the agent to write
  its self-report to the file the Stop hook reads before it hands back. :func:`with_block`
  adds or refreshes it, :func:`without_block` takes it out again and leaves every other byte of
  the file as it was (:func:`install_block` and :func:`uninstall_block` are the file edge);
- **the ask mode's Stop block** (``hooks/capture.py``, ``ask_block``): the same questions and
  shape, asked once when a stop arrives without a usable self-report.

The block is delimited by two HTML comment lines, which Markdown renders as nothing. It is
appended after a single newline: an HTML comment line may start right after a paragraph
line, so removing that one newline gives back the file as it was, whatever its last line.

Standard library only, and cheap to import: the Stop hook imports it for the ask mode.
"""

from __future__ import annotations

import json
import os

from agent_reflection.errors import ReflectionError
from agent_reflection.reflection.fields import SURFACE_VALUES

TYPE_CHECKING = False  # annotations only
if TYPE_CHECKING:
    from collections.abc import Sequence

#: The first and last line of the block (each on a line of its own).
BEGIN = (
    "<!-- agent-reflection:self-report begin (written by `reflect hook install`; "
    "`reflect hook uninstall` removes it) -->"
)
END = "<!-- agent-reflection:self-report end -->"

#: The three questions, in the order of the self-report's fields.
QUESTIONS = (
    "how confident are you that the work is right (0 to 1)?",
    "what is most likely wrong, and on which surface?",
    "what do you know that the diff does not show?",
)
#: The shape, with a placeholder per value (the ask mode shows it in one line).
TEMPLATE = {
    "confidence": "<number 0..1: how likely the work is right>",
    "most_likely_wrong": {
        "surface": "|".join(SURFACE_VALUES),
        "description": "<the most likely way the work is wrong>",
    },
    "known_not_in_diff": "<what you know that the diff does not show>",
}
#: One filled-in self-report (a test checks that the Stop hook accepts it).
EXAMPLE = {
    "confidence": 0.7,
    "most_likely_wrong": {
        "surface": "auth",
        "description": "clients that cache the old 1-hour session TTL may log users out early",
    },
    "known_not_in_diff": "the mobile app reads SESSION_TTL_SECONDS from a config endpoint",
}


def render_block(input_path: str) -> str:
    """The block, ``BEGIN`` to ``END`` and a final newline, asking for ``input_path``
    (relative to the repository root, "/"-separated)."""
    surfaces = ", ".join(f"`{s}`" for s in SURFACE_VALUES)
    example = json.dumps(EXAMPLE, indent=2, ensure_ascii=False)
    lines = [
        BEGIN,
        "## Self-report before you hand back",
        "",
        "Each time you finish a task and are about to stop, write your self-report as JSON to",
        f"`{input_path}` (at the repository root; replace any earlier one). When you stop, a",
        "hook files it with the change's git facts; the file is not committed. Answer candidly:",
        "a low confidence on risky work is more useful than a high one.",
        "",
        "- `confidence`: how likely your work is right, a number from 0 to 1.",
        "- `most_likely_wrong`: the most likely way your work is wrong: `surface` (one of",
        f"  {surfaces}) and `description`.",
        "- `known_not_in_diff`: what you know that the diff does not show (a string).",
        "",
        "Use `null` for a field you cannot answer. Example:",
        "",
        "```json",
        example,
        "```",
        END,
    ]
    return "\n".join(lines) + "\n"


def _span(text: str) -> tuple[int, int] | None:
    """Where the block is in ``text``: from the newline before ``BEGIN`` (when there is text
    before it) to the end of the ``END`` line; None when ``text`` holds no block."""
    start = _line_at(text, BEGIN)
    if start is None:
        return None
    end_at = _line_at(text, END, start)
    if end_at is None:
        return None
    stop = text.find("\n", end_at)
    stop = len(text) if stop < 0 else stop + 1
    if start > 0 and text[start - 1] == "\n":
        start -= 1  # the newline with_block put before it
    return start, stop


def _line_at(text: str, line: str, after: int = 0) -> int | None:
    """The offset of ``line`` where it fills a whole line of ``text`` (at or after ``after``)."""
    at = text.find(line, after)
    while at >= 0:
        begins = at == 0 or text[at - 1] == "\n"
        ends = at + len(line) == len(text) or text[at + len(line)] in "\r\n"
        if begins and ends:
            return at
        at = text.find(line, at + 1)
    return None


def has_block(text: str) -> bool:
    """Whether ``text`` holds the block."""
    return _span(text) is not None


def with_block(text: str, block: str) -> str:
    """``text`` with ``block`` in it once: replaced where it is, else appended after one
    newline (none when ``text`` is empty)."""
    span = _span(text)
    if span is not None:
        start, stop = span
        lead = "\n" if start < len(text) and text[start] == "\n" else ""
        return text[:start] + lead + block + text[stop:]
    return text + ("\n" if text else "") + block


def without_block(text: str) -> str:
    """``text`` as it was before :func:`with_block`: the block and the newline before it out."""
    span = _span(text)
    if span is None:
        return text
    start, stop = span
    return text[:start] + text[stop:]


# --- the file edge -----------------------------------------------------------------------------

#: The project's memory files Claude Code reads, in the order a block is looked for. A new block
#: goes into the first that exists, else the first (``CLAUDE.md`` at the root).
PROJECT_MEMORY_FILES = ("CLAUDE.md", os.path.join(".claude", "CLAUDE.md"))
#: The personal (not committed) memory file, for ``--local``.
LOCAL_MEMORY_FILES = ("CLAUDE.local.md",)


class BlockChange:
    """What :func:`install_block` or :func:`uninstall_block` did to one file: ``action`` is
    ``added``, ``updated``, ``unchanged``, ``removed``, ``deleted`` (the file held only the
    block) or ``absent`` (no block there)."""

    __slots__ = ("action", "path")

    def __init__(self, path: str, action: str) -> None:
        self.path = path
        self.action = action

    def __repr__(self) -> str:
        return f"BlockChange({self.path!r}, {self.action!r})"


def memory_file(root: str, names: Sequence[str]) -> str:
    """The memory file a block goes into: the first of ``names`` under ``root`` holding one,
    else the first that exists, else the first."""
    paths = [os.path.join(root, name) for name in names]
    for path in paths:
        if os.path.isfile(path) and has_block(_read(path)):
            return path
    return next((p for p in paths if os.path.isfile(p)), paths[0])


def install_block(root: str, names: Sequence[str], input_path: str) -> BlockChange:
    """Add (or refresh) the block asking for ``input_path`` in the project's memory file."""
    path = memory_file(root, names)
    before = _read(path) if os.path.exists(path) else None
    after = with_block(before or "", render_block(input_path))
    if after == before:
        return BlockChange(path, "unchanged")
    _write(path, after)
    return BlockChange(path, "added" if before is None or not has_block(before) else "updated")


def uninstall_block(root: str, names: Sequence[str]) -> list[BlockChange]:
    """Take the block out of each of the memory files ``names`` under ``root`` that holds it;
    a file that held nothing else is deleted (install created it)."""
    changes = []
    for name in names:
        path = os.path.join(root, name)
        if not os.path.isfile(path):
            continue
        before = _read(path)
        after = without_block(before)
        if after == before:
            changes.append(BlockChange(path, "absent"))
        elif not after:
            os.unlink(path)
            changes.append(BlockChange(path, "deleted"))
        else:
            _write(path, after)
            changes.append(BlockChange(path, "removed"))
    return changes


class MemoryFileError(ReflectionError):
    """A memory file (CLAUDE.md) that cannot be read as UTF-8 or written; nothing changed."""


def _read(path: str) -> str:
    # newline="" keeps "\r\n" as it is: the rest of the file must come back byte for byte
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            return handle.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise MemoryFileError(
            f"{path}: cannot read it as UTF-8 text ({exc}); nothing was changed. Fix the file, "
            "or install with --self-report ask (no memory-file block)"
        ) from None


def _write(path: str, text: str) -> None:
    target = os.path.realpath(path)  # a symlinked CLAUDE.md stays a link
    tmp = f"{target}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(tmp, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
        if os.path.exists(target):
            os.chmod(tmp, os.stat(target).st_mode & 0o777)
        os.replace(tmp, target)
    except OSError as exc:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise MemoryFileError(
            f"cannot write {path} ({exc.strerror or exc}); nothing was changed. Fix: make it "
            "writable, or install with --self-report ask (no memory-file block)"
        ) from None
