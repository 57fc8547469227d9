"""JSON for hooks without importing :mod:`json` (whose decoder pulls in :mod:`re`, the
largest single cost of a hook's start). Uses the C accelerator ``_json`` that :mod:`json`
itself uses; falls back to :mod:`json` where the accelerator is missing.

Same results as ``json.loads`` / ``json.dumps(obj, ensure_ascii=False, indent=indent)`` for
the plain data hooks exchange (dict, list, str, int, float, bool, None); tests prove it.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_WS = " \t\n\r"
_UTF8_BOM = b"\xef\xbb\xbf"


def loads_bytes(raw: bytes) -> Any:
    """Parse UTF-8 bytes (a leading BOM allowed), as ``json.loads(raw)`` does for UTF-8.

    ``UnicodeDecodeError`` (a ``ValueError``) on bad UTF-8; UTF-16/32, which ``json.loads``
    would detect, is not supported: hooks exchange UTF-8.
    """
    return loads(raw.decode("utf-8-sig" if raw.startswith(_UTF8_BOM) else "utf-8"))


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
        except (StopIteration, SystemError):
            # Bad JSON. Inside a document the scanner builds json.decoder.JSONDecodeError,
            # and without json imported it fails with SystemError instead. Only this error
            # path pays for json, which raises its own JSONDecodeError (a ValueError).
            import json

            return json.loads(text)
        if text[end:].strip(_WS):
            raise ValueError(f"extra data after the JSON document at character {end}")
        return obj

    def dumps(obj: Any, indent: int | None = None) -> str:
        """JSON text, non-ASCII kept as is: one line, or ``indent`` spaces per level."""
        if indent is None:
            return "".join(_encode(obj, 0))
        return _pretty(obj, " " * indent, "\n")

    def _pretty(obj: Any, indent: str, newline: str) -> str:
        # json.dumps(indent=...) layout: items one per line, "," after each but the last.
        inner = newline + indent
        if isinstance(obj, dict):
            if not obj:
                return "{}"
            items = [
                f"{_json.encode_basestring(_key(k))}: {_pretty(v, indent, inner)}"
                for k, v in obj.items()
            ]
            return "{" + inner + ("," + inner).join(items) + newline + "}"
        if isinstance(obj, list | tuple):
            if not obj:
                return "[]"
            items = [_pretty(v, indent, inner) for v in obj]
            return "[" + inner + ("," + inner).join(items) + newline + "]"
        return "".join(_encode(obj, 0))

    def _key(key: object) -> str:
        """A dict key as json.dumps writes it (non-string keys become strings)."""
        if isinstance(key, str):
            return key
        if key is True or key is False or key is None:
            return {True: "true", False: "false", None: "null"}[key]
        if isinstance(key, int | float):
            return "".join(_encode(key, 0))
        raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")

except ImportError:  # pragma: no cover - interpreters without the C accelerator
    import json

    def loads(text: str) -> Any:
        return json.loads(text)

    def dumps(obj: Any, indent: int | None = None) -> str:
        return json.dumps(obj, ensure_ascii=False, indent=indent)
