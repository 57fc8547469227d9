"""Exceptions, each named after the condition, each message saying how to fix it."""

from __future__ import annotations


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
