"""The frozen pre-registration: ``preregistration.lock`` and how a run's file compares with it.

The lock sits next to the *registered* ``preregistration.toml`` (the checkout's, or the copy
shipped in the wheel) and records the SHA-256 of the registered file, when it was frozen (UTC)
and why, then an append-only list of amendments, each with its date, reason and the new
SHA-256. The registered SHA-256 is the newest entry's. ``reflect prereg freeze --reason TEXT``
writes the first entry or appends an amendment; earlier bytes of the file are never rewritten.

Only the lock next to the registered file governs runs: a lock beside any other file would let
that file certify itself. A run whose effective file hashes differently from the registered
SHA-256, or that finds no valid lock, is exploratory; :class:`Registration` says why.
"""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agent_reflection.errors import ReflectionError

LOCK_NAME = "preregistration.lock"
LOCK_VERSION = 1
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_HEADER = """\
# The frozen pre-registration. Written by `reflect prereg freeze --reason TEXT`: never edit by
# hand. [frozen] is the first registration; each [[amendments]] entry was appended later,
# newest last, with the SHA-256 the file has from then on. A run whose pre-registration file
# does not hash to the newest SHA-256 here is EXPLORATORY.
"""


class InvalidLock(ReflectionError, ValueError):
    """``preregistration.lock`` is unreadable, malformed, or its history is inconsistent."""


class FreezeRefused(ReflectionError, ValueError):
    """``reflect prereg freeze`` cannot write the lock (no reason given, bad file)."""


@dataclass(frozen=True)
class Entry:
    """One registration event: the file's SHA-256 from then on, when (UTC) and why."""

    sha256: str
    at: str
    reason: str
    previous_sha256: str | None = None

    def to_dict(self) -> dict[str, Any]:
        doc = {"at": self.at, "reason": self.reason, "sha256": self.sha256}
        if self.previous_sha256 is not None:
            doc["previous_sha256"] = self.previous_sha256
        return doc


@dataclass(frozen=True)
class Lock:
    path: str
    file: str
    frozen: Entry
    amendments: tuple[Entry, ...]

    @property
    def newest(self) -> Entry:
        return self.amendments[-1] if self.amendments else self.frozen

    @property
    def registered_sha256(self) -> str:
        return self.newest.sha256


@dataclass(frozen=True)
class Registration:
    """How a run's pre-registration file relates to the lock.

    ``reasons`` is empty when the file is the registered one (its SHA-256 equals the lock's
    newest); otherwise it says why the run cannot be pre-registered.
    """

    route: str
    path: str
    sha256: str
    lock_path: str
    lock: Lock | None
    reasons: tuple[str, ...]

    @property
    def matches(self) -> bool:
        return not self.reasons

    def to_dict(self) -> dict[str, Any]:
        lock = self.lock
        return {
            "route": self.route,
            "path": self.path,
            "sha256": self.sha256,
            "lock": self.lock_path,
            "registered_sha256": lock.registered_sha256 if lock else None,
            "frozen_at": lock.frozen.at if lock else None,
            "frozen_reason": lock.frozen.reason if lock else None,
            "amendments": [a.to_dict() for a in lock.amendments] if lock else [],
            "matches_lock": self.matches,
            "reasons": list(self.reasons),
        }


def lock_path_for(toml_path: Path) -> Path:
    return toml_path.with_name(LOCK_NAME)


def read_lock(path: Path) -> Lock:
    """The lock at ``path``. Raises FileNotFoundError when absent, InvalidLock when bad."""
    text = path.read_text("utf-8")
    return parse_lock(text, source=str(path))


def parse_lock(text: str, *, source: str) -> Lock:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InvalidLock(f"{source}: not valid TOML ({exc})") from None
    if data.get("version") != LOCK_VERSION:
        raise InvalidLock(f"{source}: version must be {LOCK_VERSION}, got {data.get('version')!r}")
    file = data.get("file")
    if not isinstance(file, str) or not file:
        raise InvalidLock(f"{source}: file must name the registered file, got {file!r}")
    frozen_table = data.get("frozen")
    if not isinstance(frozen_table, dict):
        raise InvalidLock(f"{source}: missing table [frozen]")
    frozen = _entry(frozen_table, f"{source}: [frozen]", amendment=False)
    raw_amendments = data.get("amendments", [])
    if not isinstance(raw_amendments, list):
        raise InvalidLock(f"{source}: amendments must be [[amendments]] tables")
    amendments: list[Entry] = []
    previous = frozen
    for i, raw in enumerate(raw_amendments):
        where = f"{source}: [[amendments]] #{i + 1}"
        if not isinstance(raw, dict):
            raise InvalidLock(f"{where}: must be a table")
        entry = _entry(raw, where, amendment=True)
        if entry.previous_sha256 != previous.sha256:
            raise InvalidLock(
                f"{where}: previous_sha256 {entry.previous_sha256} is not the SHA-256 registered "
                f"before it ({previous.sha256}); the history was edited"
            )
        if entry.at < previous.at:
            raise InvalidLock(f"{where}: at {entry.at} is earlier than the entry before it")
        amendments.append(entry)
        previous = entry
    unknown = set(data) - {"version", "file", "frozen", "amendments"}
    if unknown:
        raise InvalidLock(f"{source}: unknown key(s) {sorted(unknown)}")
    return Lock(source, file, frozen, tuple(amendments))


def _entry(raw: dict[str, Any], where: str, *, amendment: bool) -> Entry:
    keys = {"sha256", "at", "reason"} | ({"previous_sha256"} if amendment else set())
    missing = keys - set(raw)
    if missing:
        raise InvalidLock(f"{where}: missing key(s) {sorted(missing)}")
    unknown = set(raw) - keys
    if unknown:
        raise InvalidLock(f"{where}: unknown key(s) {sorted(unknown)}")
    for key in keys & {"sha256", "previous_sha256"}:
        if not isinstance(raw[key], str) or not _SHA256.match(raw[key]):
            raise InvalidLock(f"{where}: {key} must be 64 lowercase hex digits, got {raw[key]!r}")
    if not isinstance(raw["reason"], str) or not raw["reason"].strip():
        raise InvalidLock(f"{where}: reason must be a non-empty string")
    at = raw["at"]
    if not isinstance(at, str) or not _is_utc_instant(at):
        raise InvalidLock(f"{where}: at must be an ISO-8601 UTC instant (…Z), got {at!r}")
    return Entry(raw["sha256"], at, raw["reason"], raw.get("previous_sha256"))


def _is_utc_instant(text: str) -> bool:
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return False
    return text.endswith("Z") and parsed.utcoffset() is not None


def utc_stamp(now: datetime) -> str:
    return now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def compare(
    *, route: str, path: str, sha256: str, lock_path: Path, is_registered_file: bool
) -> Registration:
    """Compare a pre-registration file (already read and hashed) with the governing lock."""
    lock: Lock | None = None
    reasons: list[str] = []
    try:
        lock = read_lock(lock_path)
    except FileNotFoundError:
        reasons.append(
            f"no {LOCK_NAME} next to the registered file ({lock_path}): the pre-registration "
            "was never frozen (reflect prereg freeze --reason TEXT)"
        )
    except (OSError, UnicodeDecodeError) as exc:
        reasons.append(f"{lock_path}: cannot read the lock ({exc})")
    except InvalidLock as exc:
        reasons.append(f"the lock is invalid: {exc}")
    if lock is not None and sha256 != lock.registered_sha256:
        entry = lock.newest
        what = (
            f"{path} was edited after it was registered"
            if is_registered_file
            else f"{path} is not the registered pre-registration"
        )
        reasons.append(
            f"{what}: its SHA-256 is {sha256[:12]}…, the lock registers "
            f"{entry.sha256[:12]}… (registered {entry.at})"
        )
    return Registration(route, path, sha256, str(lock_path), lock, tuple(reasons))


@dataclass(frozen=True)
class FreezeOutcome:
    action: str  # frozen | amended | unchanged
    lock: Lock


def freeze(
    lock_path: Path, *, file_name: str, sha256: str, reason: str, now: datetime
) -> FreezeOutcome:
    """Register ``sha256``: write a new lock, or append an amendment to the existing one.

    Nothing is written when the lock already registers ``sha256``. Earlier bytes of the lock
    are kept as they are (append-only); the new text is read back and checked.
    """
    reason = reason.strip()
    if not reason:
        raise FreezeRefused("a freeze needs a reason: reflect prereg freeze --reason TEXT")
    if not _SHA256.match(sha256):
        raise FreezeRefused(f"not a SHA-256: {sha256!r}")
    at = utc_stamp(now)
    if not lock_path.exists():
        text = (
            _HEADER
            + f"\nversion = {LOCK_VERSION}\nfile = {_toml_str(file_name)}\n\n[frozen]\n"
            + _fields(sha256=sha256, at=at, reason=reason)
        )
        action = "frozen"
    else:
        old_text = lock_path.read_text("utf-8")
        lock = parse_lock(old_text, source=str(lock_path))
        if lock.registered_sha256 == sha256:
            return FreezeOutcome("unchanged", lock)
        if at < lock.newest.at:
            raise FreezeRefused(
                f"{lock_path}: the clock ({at}) is earlier than the newest entry ({lock.newest.at})"
            )
        sep = "" if old_text.endswith("\n") else "\n"
        text = (
            old_text
            + sep
            + "\n[[amendments]]\n"
            + _fields(sha256=sha256, previous_sha256=lock.registered_sha256, at=at, reason=reason)
        )
        action = "amended"
    written = parse_lock(text, source=str(lock_path))  # never write a lock we cannot read
    tmp = lock_path.with_name(lock_path.name + ".tmp")
    tmp.write_text(text, "utf-8")
    tmp.replace(lock_path)
    return FreezeOutcome(action, written)


def _toml_str(value: str) -> str:
    # a JSON string is a TOML basic string (same escapes: \" \\ \n \t \uXXXX)
    return json.dumps(value, ensure_ascii=False)


def _fields(**values: str) -> str:
    return "".join(f"{k} = {_toml_str(v)}\n" for k, v in values.items())
