"""Exceptions, each named after the condition, each message saying how to fix it."""

from __future__ import annotations

TYPE_CHECKING = False  # not imported from typing: the hooks import this module at start

if TYPE_CHECKING:
    from json import JSONDecodeError


class ReflectionError(Exception):
    """Base class of every error this package raises on purpose."""


class InvalidSidecar(ReflectionError, ValueError):
    """A record does not conform to reflection.v1.

    ``path`` is the JSON path of the first problem (``/risk/score``), ``expected`` says what
    the schema wants there.
    """

    def __init__(self, path: str, expected: str, *, source: str | None = None) -> None:
        self.path = path or "/"
        self.expected = expected
        self.source = source
        where = f"{source}: " if source else ""
        super().__init__(f"{where}invalid reflection.v1 at {self.path}: {expected}")


class InvalidRiskTable(ReflectionError, ValueError):
    """A risk-floor TOML table is malformed."""


def json_error_text(exc: JSONDecodeError) -> str:
    """What is wrong with a JSON text, and where: ``Expecting value at column 1``."""
    return f"{json_error_message(exc)} at column {exc.colno}"


def json_error_message(exc: JSONDecodeError) -> str:
    """What is wrong with a JSON text, without the position: ``Expecting value``.

    The message of ``json``'s C scanner for a raw control character in a string ends in "at"
    (``Invalid control character at``), its pure-Python twin's too (``... '\\n' at``): the
    word is dropped here, so a message that adds the position never reads "at at"."""
    return exc.msg.removesuffix(" at")
