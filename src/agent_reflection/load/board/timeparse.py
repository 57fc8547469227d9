"""Robust timestamp parsing for board exports.

Accepted: ISO-8601 with or without a zone (``2011-07-19T21:32:09.000+0000``, ``...Z``,
``...+02:00``, ``2024-05-01 10:00``, ``2024-05-01``), Jira's UI format
(``19/Jul/11 9:32 PM``), and Unix epoch seconds or milliseconds (numbers). A value without a
zone is taken as UTC (documented in docs/boards.md). Every result is timezone-aware UTC.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

from agent_reflection.load.board.model import RecordError

_OFFSET_NO_COLON = re.compile(r"([+-]\d{2})(\d{2})$")
_UI_FORMATS = ("%d/%b/%y %I:%M %p", "%d/%b/%Y %I:%M %p", "%d/%b/%y %H:%M", "%Y/%m/%d %H:%M")


def parse_time(value: object, field_name: str) -> datetime | None:
    """``value`` as an aware UTC datetime; ``None``/empty gives ``None``.

    Raises :class:`RecordError` naming ``field_name`` when the value is not a timestamp.
    """
    if value is None:
        return None
    if isinstance(value, bool):
        raise RecordError(field_name, f"expected a timestamp, got boolean {value!r}")
    if isinstance(value, int | float):
        seconds = value / 1000 if abs(value) > 1e11 else value
        try:
            return datetime.fromtimestamp(seconds, UTC)
        except (OverflowError, OSError, ValueError) as exc:
            raise RecordError(field_name, f"epoch {value!r} out of range") from exc
    if not isinstance(value, str):
        raise RecordError(field_name, f"expected a timestamp string, got {type(value).__name__}")
    text = value.strip()
    if not text:
        return None
    parsed = _parse_text(text)
    if parsed is None:
        raise RecordError(
            field_name, f"{text[:60]!r} is not a timestamp (want ISO-8601, e.g. 2024-05-01T10:00Z)"
        )
    if parsed.tzinfo is None:
        return parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)


def _parse_text(text: str) -> datetime | None:
    candidate = text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text
    candidate = _OFFSET_NO_COLON.sub(r"\1:\2", candidate)
    try:
        return datetime.fromisoformat(candidate)
    except ValueError:
        pass
    for fmt in _UI_FORMATS:
        try:
            return datetime.strptime(text, fmt)
        except ValueError:
            continue
    return None
