"""Reading a tier-2 answer: ``SKILL_ACTION:`` paragraphs and the JSON tail.

* Paragraphs: every line that carries the marker (any case, ``SKILL_ACTION`` or ``skill action``,
  after a bullet, a number or bold markers) starts one; it runs to the first blank line or the
  next marker line. Several per answer are all kept (the peer's v1 took only the first).
* JSON tail (the peer's later format): the last ``{...}`` that decodes to an object with nothing
  but whitespace (or a closing code fence) after it. ``skill_actions`` keeps non-empty strings,
  ``task_actions`` the first item with both ``content`` and ``ai_prompt``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

_MARKER = re.compile(r"skill[_ ]action\s*(?:\*\*|__)?\s*:\s*(?:\*\*|__)?", re.I)
_TRAILER = re.compile(r"\s*(?:```)?\s*$")
MAX_TASK_ACTIONS = 1


@dataclass(frozen=True)
class JsonTail:
    """The decoded JSON tail of an answer (empty when it has none)."""

    skill_actions: tuple[str, ...] = ()
    task_actions: tuple[dict[str, Any], ...] = field(default_factory=tuple)
    found: bool = False


def skill_action_paragraphs(text: str) -> list[str]:
    """Every ``SKILL_ACTION:`` paragraph of ``text``, marker and bullet stripped."""
    out: list[str] = []
    current: list[str] | None = None
    for line in text.splitlines():
        match = _MARKER.search(line)
        if match:
            if current:
                out.append("\n".join(current).strip())
            first = line[match.end() :].strip()
            current = [first] if first else []
        elif current is not None:
            if not line.strip():
                out.append("\n".join(current).strip())
                current = None
            else:
                current.append(line.strip())
    if current:
        out.append("\n".join(current).strip())
    return [p for p in out if p]


def count_markers(text: str) -> int:
    """How many ``SKILL_ACTION:`` markers ``text`` has (the peer's ``actions_recommended``)."""
    return len(_MARKER.findall(text))


#: How far from the end of an answer its JSON tail may start, and how many ``{`` are tried as
#: its start: each try parses to the end, so an answer of nested or unclosed objects would
#: otherwise cost time quadratic in its length.
MAX_TAIL_CHARS = 256 * 1024
MAX_TAIL_TRIES = 1000


def json_tail(text: str) -> JsonTail:
    """The trailing JSON object of ``text``, string-aware (braces inside strings are fine);
    none when it is nested too deeply to read or starts too far from the end."""
    decoder = json.JSONDecoder()
    pos = len(text)
    floor = max(0, len(text) - MAX_TAIL_CHARS)
    for _ in range(MAX_TAIL_TRIES):
        pos = text.rfind("{", floor, pos)
        if pos < 0:
            return JsonTail()
        try:
            obj, end = decoder.raw_decode(text, pos)
        except (ValueError, RecursionError):
            continue
        if isinstance(obj, dict) and _TRAILER.fullmatch(text[end:]):
            break
    else:
        return JsonTail()
    skills = obj.get("skill_actions")
    skill_actions = (
        tuple(s for s in skills if isinstance(s, str) and s.strip())
        if isinstance(skills, list)
        else ()
    )
    tasks = obj.get("task_actions")
    task_actions = tuple(
        t
        for t in (tasks if isinstance(tasks, list) else [])
        if isinstance(t, dict) and t.get("content") and t.get("ai_prompt")
    )[:MAX_TASK_ACTIONS]
    return JsonTail(skill_actions, task_actions, True)


def recommended_skill_actions(text: str) -> list[str]:
    """Paragraphs, then JSON-tail skill actions not already among them (order kept)."""
    out = skill_action_paragraphs(text)
    for action in json_tail(text).skill_actions:
        if action not in out:
            out.append(action)
    return out
