"""JSON for hooks without importing :mod:`json` (whose decoder pulls in :mod:`re`, the
largest single cost of a hook's start). Uses the C accelerator ``_json`` that :mod:`json`
itself uses; falls back to :mod:`json` where the accelerator is missing.

Same results as ``json.loads`` / ``json.dumps(obj, ensure_ascii=False)`` for the plain data
hooks exchange (dict, list, str, int, float, bool, None).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_WS = " \t\n\r"

try:
    import _json

    class _Ctx:
        strict = True
        object_hook = None
        object_pairs_hook = None
        parse_float = float
        parse_int = int
        parse_constant = float

    _scan = _json.make_scanner(_Ctx())  # type: ignore[arg-type]

    def _default(obj: object) -> object:
        raise TypeError(f"Object of type {type(obj).__name__} is not JSON serializable")

    _encode = _json.make_encoder(
        None, _default, _json.encode_basestring, None, ": ", ", ", False, False, True
    )

    def loads(text: str) -> Any:
        """Parse one JSON document (``ValueError`` when it is not exactly one)."""
        start = len(text) - len(text.lstrip(_WS))
        if start == len(text):
            raise ValueError("no JSON document")
        try:
            obj, end = _scan(text, start)
        except StopIteration as exc:
            raise ValueError(f"invalid JSON at character {exc.value}") from None
        if text[end:].strip(_WS):
            raise ValueError(f"extra data after the JSON document at character {end}")
        return obj

    def dumps(obj: Any) -> str:
        """One line of JSON, non-ASCII kept as is."""
        return "".join(_encode(obj, 0))

except ImportError:  # pragma: no cover - interpreters without the C accelerator
    import json

    def loads(text: str) -> Any:
        return json.loads(text)

    def dumps(obj: Any) -> str:
        return json.dumps(obj, ensure_ascii=False)
