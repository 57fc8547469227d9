"""The registration: every analysis choice of P1/P2/P3, fixed before seeing the data, frozen in
a lock, and checked against the data a run reads.

**The file.** :func:`load_preregistration` reads and validates ``preregistration.toml`` (errors
name the file, the key and what is expected) and records its SHA-256. :func:`load_for_run`
returns the parameters a run actually uses: the *effective* file
(:func:`resolve_preregistration`) compared with the lock of the registered file, plus the
overrides. Any difference from the registered file, a missing lock or an override that changes
a value marks the run **exploratory**, with the reasons. P2's ``[[p2.rules]]`` take the
conditions declared in :mod:`agent_reflection.experiments.p2.buckets`.

**The lock.** ``preregistration.lock`` sits next to the *registered* ``preregistration.toml``
(the checkout's, or the copy shipped in the wheel) and records the SHA-256 of the registered
file, when it was frozen (UTC) and why, then an append-only list of amendments, each with its
date, reason and the new SHA-256. The registered SHA-256 is the newest entry's. ``reflect
prereg freeze --reason TEXT`` writes the first entry or appends an amendment (:func:`freeze`);
earlier bytes of the file are never rewritten. Only the lock next to the registered file
governs runs: a lock beside any other file would let that file certify itself. A run whose
effective file hashes differently from the registered SHA-256, or that finds no valid lock, is
exploratory; :class:`Registration` says why.

**Seen data.** A registration written while some data were read is not out of sample for
those data: its rules (and their amendments) were fitted, in part, to them. The registration
names such data in its ``[seen]`` table (:class:`SeenData`): markers of each repository, board
and label corpus it was written against. A run whose tables hold any marker is
**exploratory**, and says which data and why (:func:`mark_seen`), so a verdict on them is never
shown as a confirmation of the registration. Other data confirm. Markers, not the data: the
registration stays small, and a marker is found wherever the data were loaded from (a clone
instead of a bundle, a renamed export). A small slice of a seen repository or corpus can miss
every sampled marker; a root or newest commit, or a project key, still catches most loads.

**Power.** :func:`power_table`: the minimum samples the registered smallest useful effects
imply (``reflect prereg power``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import os
import re
import tomllib
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from agent_reflection.config import build, check_keys, coerce_field
from agent_reflection.errors import ReflectionError
from agent_reflection.experiments.analysis_code import code_differences, code_sha256
from agent_reflection.experiments.p2.buckets import (
    FIX_TEST_RULES,
    Rule,
    parse_rule,
    regex,
    relative_globs,
)
from agent_reflection.load.board.channels import CHANNELS
from agent_reflection.load.git.kinds import DEFAULT_RULES as DEFAULT_KIND_RULES
from agent_reflection.load.git.kinds import KindRules
from agent_reflection.load.git.signals import FIX_WORDINGS

if TYPE_CHECKING:
    import duckdb

    from agent_reflection.stats.power import SampleSize

# --- the lock ---------------------------------------------------------------------------------

LOCK_NAME = "preregistration.lock"
LOCK_VERSION = 1
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_HEADER = """\
# The frozen pre-registration. Written by `reflect prereg freeze --reason TEXT`: never edit by
# hand. [frozen] is the first registration; each [[amendments]] entry was appended later,
# newest last, with the SHA-256 the file has from then on and the SHA-256 of each file of the
# analysis code (its code table). Each entry hashes every byte before it and itself, so a hand
# edit is found. A run whose pre-registration file or code does not hash to the newest entry
# here is EXPLORATORY.
"""


class InvalidLock(ReflectionError, ValueError):
    """``preregistration.lock`` is unreadable, malformed, or its history is inconsistent."""


class FreezeRefused(ReflectionError, ValueError):
    """``reflect prereg freeze`` cannot write the lock (no reason given, bad file)."""


@dataclass(frozen=True)
class Entry:
    """One registration event: the file's SHA-256 from then on, when (UTC) and why.

    Entries written since the lock became a hash chain also carry the analysis code they
    register (``code``: path -> SHA-256, :mod:`agent_reflection.experiments.analysis_code`,
    and its one ``code_sha256``), the SHA-256 of every byte of the lock before the entry
    (``previous_entry_sha256``) and the SHA-256 of the entry itself (``entry_sha256``, over
    its other keys): an edit anywhere before the newest entry breaks the next entry's
    ``previous_entry_sha256``; an edit of the newest entry breaks its own ``entry_sha256``.
    """

    sha256: str
    at: str
    reason: str
    previous_sha256: str | None = None
    code: tuple[tuple[str, str], ...] | None = None
    code_sha256: str | None = None
    previous_entry_sha256: str | None = None
    entry_sha256: str | None = None

    @property
    def code_map(self) -> dict[str, str] | None:
        return dict(self.code) if self.code is not None else None

    def content_sha256(self) -> str:
        """The SHA-256 the entry's ``entry_sha256`` must have: of its other keys, as canonical
        JSON (sorted keys, no spaces)."""
        doc: dict[str, Any] = {
            "sha256": self.sha256,
            "at": self.at,
            "reason": self.reason,
            "previous_sha256": self.previous_sha256,
            "code": self.code_map,
            "code_sha256": self.code_sha256,
            "previous_entry_sha256": self.previous_entry_sha256,
        }
        text = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def to_dict(self) -> dict[str, Any]:
        doc = {"at": self.at, "reason": self.reason, "sha256": self.sha256}
        if self.previous_sha256 is not None:
            doc["previous_sha256"] = self.previous_sha256
        if self.code_sha256 is not None:
            doc["code_sha256"] = self.code_sha256
        if self.entry_sha256 is not None:
            doc["entry_sha256"] = self.entry_sha256
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

    @property
    def newest_rules(self) -> tuple[int, Entry]:
        """The newest entry that changed the registered file, with its number (0 = frozen).
        An entry that registers new code under the same file (an upgrade of the tool) changes
        no rule, so it is not an amendment a team's loaded data could have shaped."""
        for number in range(len(self.amendments), 0, -1):
            entry = self.amendments[number - 1]
            if entry.sha256 != entry.previous_sha256:
                return number, entry
        return 0, self.frozen


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
    raw_amendments = data.get("amendments", [])
    if not isinstance(raw_amendments, list):
        raise InvalidLock(f"{source}: amendments must be [[amendments]] tables")
    unknown = set(data) - {"version", "file", "frozen", "amendments"}
    if unknown:
        raise InvalidLock(f"{source}: unknown key(s) {sorted(unknown)}")
    starts = _entry_starts(text)
    if len(starts) != 1 + len(raw_amendments):
        raise InvalidLock(
            f"{source}: each entry must start with a line [frozen] or [[amendments]] of its own"
        )
    frozen = _entry(frozen_table, f"{source}: [frozen]", amendment=False)
    _check_chain(frozen, text[: starts[0]], f"{source}: [frozen]", chained_before=False)
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
        chained_before = previous.entry_sha256 is not None
        _check_chain(entry, text[: starts[i + 1]], where, chained_before=chained_before)
        amendments.append(entry)
        previous = entry
    return Lock(source, file, frozen, tuple(amendments))


#: A line that opens an entry of the lock (a reason is one TOML string: it has no line break).
_ENTRY_HEADER = re.compile(r"^(?:\[frozen\]|\[\[amendments\]\])[ \t]*$", re.MULTILINE)
_CHAIN_KEYS = {"previous_entry_sha256", "entry_sha256"}
_CODE_KEYS = {"code", "code_sha256"}
_RESTORE = "restore the lock from version control; only `reflect prereg freeze` writes it"


def _entry_starts(text: str) -> list[int]:
    return [m.start() for m in _ENTRY_HEADER.finditer(text)]


def _check_chain(entry: Entry, before: str, where: str, *, chained_before: bool) -> None:
    """The entry's hashes: of the lock before it, and of itself. An entry without them (the
    lock's first entries, written before the chain) is accepted only before the first
    chained one."""
    if entry.entry_sha256 is None:
        if chained_before:
            raise InvalidLock(
                f"{where}: has no entry_sha256 although an entry before it has one: it was "
                f"written by hand; {_RESTORE}"
            )
        return
    before_sha = hashlib.sha256(before.encode("utf-8")).hexdigest()
    if entry.previous_entry_sha256 != before_sha:
        raise InvalidLock(
            f"{where}: previous_entry_sha256 {entry.previous_entry_sha256} is not the SHA-256 of "
            f"the lock before it ({before_sha}): an earlier part of the lock was edited by hand; "
            f"{_RESTORE}"
        )
    if entry.code is not None and code_sha256(dict(entry.code)) != entry.code_sha256:
        raise InvalidLock(
            f"{where}: code_sha256 {entry.code_sha256} is not the SHA-256 of its [code] table: "
            f"the table was edited by hand; {_RESTORE}"
        )
    if entry.content_sha256() != entry.entry_sha256:
        raise InvalidLock(
            f"{where}: entry_sha256 {entry.entry_sha256} does not match the entry's contents "
            f"(sha256 {entry.sha256}, at {entry.at}): the entry was edited by hand after it "
            f"was written; {_RESTORE}"
        )


def _entry(raw: dict[str, Any], where: str, *, amendment: bool) -> Entry:
    keys = {"sha256", "at", "reason"} | ({"previous_sha256"} if amendment else set())
    missing = keys - set(raw)
    if missing:
        raise InvalidLock(f"{where}: missing key(s) {sorted(missing)}")
    chained = _CHAIN_KEYS & set(raw)
    if chained and chained != _CHAIN_KEYS:
        raise InvalidLock(f"{where}: missing key(s) {sorted(_CHAIN_KEYS - chained)}; {_RESTORE}")
    coded = _CODE_KEYS & set(raw)
    if coded and (coded != _CODE_KEYS or not chained):
        raise InvalidLock(
            f"{where}: code and code_sha256 come together, in a chained entry; {_RESTORE}"
        )
    unknown = set(raw) - keys - _CHAIN_KEYS - _CODE_KEYS
    if unknown:
        raise InvalidLock(f"{where}: unknown key(s) {sorted(unknown)}")
    hashes = (keys | chained | coded) & {
        "sha256",
        "previous_sha256",
        "previous_entry_sha256",
        "entry_sha256",
        "code_sha256",
    }
    for key in hashes:
        if not isinstance(raw[key], str) or not _SHA256.match(raw[key]):
            raise InvalidLock(f"{where}: {key} must be 64 lowercase hex digits, got {raw[key]!r}")
    if not isinstance(raw["reason"], str) or not raw["reason"].strip():
        raise InvalidLock(f"{where}: reason must be a non-empty string")
    at = raw["at"]
    if not isinstance(at, str) or not _is_utc_instant(at):
        raise InvalidLock(f"{where}: at must be an ISO-8601 UTC instant (…Z), got {at!r}")
    code: tuple[tuple[str, str], ...] | None = None
    if coded:
        table = raw["code"]
        if not isinstance(table, dict) or not all(
            isinstance(v, str) and _SHA256.match(v) for v in table.values()
        ):
            raise InvalidLock(f"{where}: code must be a table of path = SHA-256")
        code = tuple(sorted(table.items()))
    return Entry(
        raw["sha256"],
        at,
        raw["reason"],
        raw.get("previous_sha256"),
        code,
        raw.get("code_sha256"),
        raw.get("previous_entry_sha256"),
        raw.get("entry_sha256"),
    )


def _is_utc_instant(text: str) -> bool:
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return False
    return text.endswith("Z") and parsed.utcoffset() is not None


def utc_stamp(now: datetime) -> str:
    return now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def compare(
    *,
    route: str,
    path: str,
    sha256: str,
    lock_path: Path,
    is_registered_file: bool,
    code: Mapping[str, str] | None = None,
    notebooks_from: str = "",
) -> Registration:
    """Compare a pre-registration file (already read and hashed) with the governing lock, and
    the analysis code a run executes (``code``, path -> SHA-256; None: not compared) with the
    code the lock's newest entry registers."""
    lock: Lock | None = None
    reasons: list[str] = []
    try:
        lock = parse_lock(lock_path.read_text("utf-8"), source=str(lock_path))
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
    if lock is not None and code is not None:
        registered_code = lock.newest.code_map
        if registered_code is None:
            reasons.append(
                f"the lock registers no analysis code (its newest entry, {lock.newest.at}, "
                "predates code hashes): the notebooks and the experiment and statistics code "
                "that computed this verdict are not pre-registered (reflect prereg freeze "
                "--reason TEXT registers them)"
            )
        else:
            differences = code_differences(registered_code, code, notebooks_from=notebooks_from)
            if differences:
                reasons.append(
                    "the analysis code differs from the code the lock registers "
                    f"({lock.newest.at}): {'; '.join(differences)}"
                )
    return Registration(route, path, sha256, str(lock_path), lock, tuple(reasons))


@dataclass(frozen=True)
class FreezeOutcome:
    action: str  # frozen | amended | unchanged
    lock: Lock


def freeze(
    lock_path: Path,
    *,
    file_name: str,
    sha256: str,
    reason: str,
    now: datetime,
    code: Mapping[str, str] | None = None,
) -> FreezeOutcome:
    """Register ``sha256`` (and the analysis ``code``, path -> SHA-256): write a new lock, or
    append an amendment to the existing one.

    Nothing is written when the lock already registers ``sha256`` and this code. Earlier bytes
    of the lock are kept as they are (append-only); each new entry hashes every byte before it
    and itself (:class:`Entry`); the new text is read back and checked.
    """
    reason = reason.strip()
    if not reason:
        raise FreezeRefused("a freeze needs a reason: reflect prereg freeze --reason TEXT")
    if not _SHA256.match(sha256):
        raise FreezeRefused(f"not a SHA-256: {sha256!r}")
    at = utc_stamp(now)
    code_pairs = tuple(sorted(code.items())) if code is not None else None
    if not lock_path.exists():
        before = _HEADER + f"\nversion = {LOCK_VERSION}\nfile = {_toml_str(file_name)}\n\n"
        text = before + _entry_text("frozen", Entry(sha256, at, reason, None, code_pairs), before)
        action = "frozen"
    else:
        old_text = lock_path.read_text("utf-8")
        lock = parse_lock(old_text, source=str(lock_path))
        if lock.registered_sha256 == sha256 and (
            code_pairs is None or lock.newest.code == code_pairs
        ):
            return FreezeOutcome("unchanged", lock)
        if at < lock.newest.at:
            raise FreezeRefused(
                f"{lock_path}: the clock ({at}) is earlier than the newest entry ({lock.newest.at})"
            )
        sep = "" if old_text.endswith("\n") else "\n"
        before = old_text + sep + "\n"
        entry = Entry(sha256, at, reason, lock.registered_sha256, code_pairs)
        text = before + _entry_text("amendments", entry, before)
        action = "amended"
    written = parse_lock(text, source=str(lock_path))  # never write a lock we cannot read
    tmp = lock_path.with_name(lock_path.name + ".tmp")
    tmp.write_text(text, "utf-8")
    tmp.replace(lock_path)
    return FreezeOutcome(action, written)


def _entry_text(table: str, entry: Entry, before: str) -> str:
    """The TOML of a new entry ``[frozen]`` or ``[[amendments]]`` that follows ``before``,
    with its chain hashes."""
    chained = replace(
        entry,
        code_sha256=code_sha256(dict(entry.code)) if entry.code is not None else None,
        previous_entry_sha256=hashlib.sha256(before.encode("utf-8")).hexdigest(),
    )
    chained = replace(chained, entry_sha256=chained.content_sha256())
    values = {"sha256": chained.sha256}
    if chained.previous_sha256 is not None:
        values["previous_sha256"] = chained.previous_sha256
    values |= {"at": chained.at, "reason": chained.reason}
    if chained.code_sha256 is not None:
        values["code_sha256"] = chained.code_sha256
    assert chained.previous_entry_sha256 is not None and chained.entry_sha256 is not None
    values |= {
        "previous_entry_sha256": chained.previous_entry_sha256,
        "entry_sha256": chained.entry_sha256,
    }
    header = "[frozen]" if table == "frozen" else "[[amendments]]"
    text = f"{header}\n" + _fields(**values)
    if chained.code is not None:
        text += f"\n[{table}.code]\n" + "".join(
            f"{_toml_str(path)} = {_toml_str(sha)}\n" for path, sha in chained.code
        )
    return text


def _toml_str(value: str) -> str:
    # a JSON string is a TOML basic string (same escapes: \" \\ \n \t \uXXXX)
    return json.dumps(value, ensure_ascii=False)


def _fields(**values: str) -> str:
    return "".join(f"{k} = {_toml_str(v)}\n" for k, v in values.items())


# --- the file ---------------------------------------------------------------------------------

#: Environment variable naming the pre-registration file to use.
PREREG_ENV = "REFLECT_PREREGISTRATION"
FILE_NAME = "preregistration.toml"
#: How the effective file was chosen, in order of precedence (see resolve_preregistration).
ROUTE_FLAG = "--prereg"
ROUTE_ENV = f"${PREREG_ENV}"
ROUTE_WORKING_FOLDER = f"./{FILE_NAME}"
ROUTE_REGISTERED = "registered"
#: P1's primary interval: the cluster bootstrap, or the cluster-robust stratified DeLong one.
P1_CI_METHODS = ("cluster_bootstrap", "stratified_delong")
#: How the cluster bootstrap draws its resamples (stats/cluster_bootstrap.py): the type counts
#: as one multinomial, or (registrations before that amendment) C cluster indices a resample.
#: The same bootstrap distribution either way; the random streams differ.
P1_BOOTSTRAP_DRAWS = ("multinomial-by-cluster-type", "cluster-index")
#: P1's continue rules (``[p1] continue_rule``): "interval" = the lower bound clears 0.5 and the
#: interval still allows the smallest useful AUC; "estimate" = the lower bound clears 0.5 and the
#: estimate reaches the smallest useful AUC (what a file without the key registered).
P1_CONTINUE_RULES = ("interval", "estimate")
#: How P1 names strata whose interval lies wholly below 0.5 (``[p1] below_chance_strata``).
P1_BELOW_CHANCE_RULES = ("bonferroni", "off")
#: Keys a section no longer has, and why: a file that still sets one is refused (naming the
#: key), because its registration expected a behaviour the analysis no longer has.
RETIRED_KEYS: dict[str, dict[str, str]] = {
    "seen": {
        "label_record_keys": (
            "it named records by the SHA-256 of the whole record, so the same records with a "
            "field added or dropped were not found; name them by their key instead (label_keys: "
            "the SHA-256 of the record's cluster and strata values, sql/experiments/"
            "seen_labels.sql)"
        ),
    },
    "p1": {
        "strata_columns": (
            "P1 took the first of these columns present in the data, so labels whose strata "
            "column was renamed (model -> llm) were silently pooled into one stratum; declare "
            'the one column instead: strata_column = "model" (and loop_strata_column)'
        ),
        "cluster_columns": (
            "P1 took the first of these columns present in the data, so labels whose cluster "
            "column was renamed silently lost their clustering; declare the one column "
            'instead: cluster_column = "question_id" (and loop_cluster_column)'
        ),
        "bootstrap_max_rows": (
            "the cluster bootstrap now runs at every size (it counts each resample's AUC "
            "from per-cluster counts, linear in rows), so there is no row limit above which "
            "the stratified DeLong interval replaces it; delete the key"
        ),
    },
}


class InvalidPreregistration(ReflectionError, ValueError):
    """The pre-registration file is missing, unreadable or has a wrong key or value."""


# --- what a key's value must be -----------------------------------------------------------------
#
# config.build checks each key's type; what else a value must be is declared on its field
# (``confidence_level: Level``, ``Annotated[int, at_least(1)]``) and checked by
# _check_section, which then runs the checks that read several keys.

#: A declared check: what is wrong with a value ("must be >= 1, got 0"), or None.
Check = Callable[[Any], str | None]


def _why(why: str) -> str:
    return f" ({why})" if why else ""


def within(bounds: str, why: str = "") -> Check:
    """The value lies in ``bounds``, an interval as written: ``"(0, 1]"``."""
    low, high = (float(end) for end in bounds[1:-1].split(","))

    def check(value: float) -> str | None:
        above = value >= low if bounds[0] == "[" else value > low
        below = value <= high if bounds[-1] == "]" else value < high
        return None if above and below else f"must be in {bounds}, got {value}{_why(why)}"

    return check


def at_least(low: int, why: str = "") -> Check:
    def check(value: int) -> str | None:
        return None if value >= low else f"must be >= {low}, got {value}{_why(why)}"

    return check


def one_of(values: Sequence[str], why: str = "") -> Check:
    def check(value: str) -> str | None:
        if value in values:
            return None
        return f"must be one of {list(values)}, got {value!r}{_why(why)}"

    return check


def raises(parse: Callable[[Any], object]) -> Check:
    """The check of a parser that raises ValueError saying what is wrong (P2's rule
    conditions': a section's regex and glob keys follow the same rules as a rule's)."""

    def check(value: Any) -> str | None:
        try:
            parse(value)
        except ValueError as exc:
            return str(exc)
        return None

    return check


def relative_paths(paths: tuple[str, ...]) -> str | None:
    if any(not path.strip() or Path(path).is_absolute() for path in paths):
        return "entries must be non-empty paths relative to the file"
    return None


def increasing(edges: tuple[float, ...]) -> str | None:
    if len(edges) < 2 or any(b <= a for a, b in itertools.pairwise(edges)):
        return "must be increasing edges"
    return None


def failed_conclusions(conclusions: tuple[str, ...]) -> str | None:
    bad = [c for c in conclusions if c != c.strip().lower() or not c]
    if bad:
        return (
            "must be lower-case conclusions as ci_runs stores them (failure, timed_out, ...), "
            f"got {bad}"
        )
    return "cannot list success" if "success" in conclusions else None


def data_or_instant(value: str) -> str | None:
    if value != "data":
        try:
            datetime.fromisoformat(value)
        except ValueError:
            return f"must be 'data' or an ISO-8601 instant, got {value!r}"
    return None


def distinct_channels(channels: tuple[str, ...]) -> str | None:
    unknown = [c for c in channels if c not in CHANNELS]
    if unknown or len(set(channels)) != len(channels):
        return f"must name distinct channels among {list(CHANNELS)}, got {list(channels)}"
    return None


#: A confidence level or a power.
Level = Annotated[float, within("(0, 1)")]
Days = Annotated[int, at_least(0)]
Regex = Annotated[str, raises(regex)]
Globs = Annotated[tuple[str, ...], raises(relative_globs)]
RelativePaths = Annotated[tuple[str, ...], relative_paths]
TIME_COLUMNS = ("committer_time", "author_time")
#: P2's verdict statistics (``[p2] share_statistic``)
P2_SHARE_STATISTICS = ("gate-corrected", "precision-corrected", "raw")
#: How P2 counts a fix of a fix (``[p2] fix_of_fix``)
FIX_OF_FIX = ("failure-of-first-fix", "excluded")
#: Span rules of [agent_vs_human]: the months with an agent commit, or all history.
AGENT_VS_HUMAN_SPANS = ("agent-months", "all")


@dataclass(frozen=True)
class P1Params:
    metric: str
    label_source: Annotated[str, one_of(("corpus", "loop"))]
    high_confidence_threshold: Annotated[float, within("[0, 1]")]
    confidence_level: Level
    ci_method: Annotated[str, one_of(P1_CI_METHODS)]
    bootstrap_method: Annotated[str, one_of(("percentile",), "the cluster bootstrap's interval")]
    bootstrap_resamples: Annotated[int, at_least(1)]
    seed: int
    smallest_useful_auc: Annotated[float, within("(0.5, 1)", "0.5 is chance")]
    power: Level
    # the analysis unit, declared (never guessed): the labels column whose values are P1's
    # strata, and the one whose values are its clusters ("" declares none)
    strata_column: str
    cluster_column: str
    ece_bins: Annotated[tuple[float, ...], increasing]
    lift_fraction: Annotated[float, within("(0, 1]")]
    group_columns: tuple[str, ...]
    min_group_rows: int
    # loop labels (label_source = "loop"): sessions, their commits and outcomes (load/sessions.py)
    loop_window_days: Annotated[int, at_least(1)] = 30
    loop_link_hours_before: Days = 8
    loop_link_hours_after: Days = 24
    loop_link_min_jaccard: Annotated[float, within("(0, 1]")] = 0.5
    loop_ignore_cosmetic_fixes: bool = True
    # a file without the key predates the multinomial draws: it registered cluster indices
    bootstrap_draws: Annotated[str, one_of(P1_BOOTSTRAP_DRAWS)] = "cluster-index"
    # the same for loop labels (label_source = "loop"), whose rows always carry both columns
    loop_strata_column: str = "agent"
    loop_cluster_column: str = "task_ref"
    # the largest bootstrap_resamples x (cluster types + (stratum, score) keys) the bootstrap is
    # the primary interval for; above it the clustered stratified DeLong interval is primary.
    # 0: no budget (what a file without the key registered: the bootstrap at every size)
    bootstrap_budget: Annotated[int, at_least(0, "0: no budget")] = 0
    # the precision target: an undecided primary interval wider than this half-width is
    # insufficient-data. 0: none (what a file without the key registered: fewer rows of a
    # class than the per-class minimum derived from smallest_useful_auc and power)
    max_ci_half_width: Annotated[float, within("[0, 0.5)", "0: the per-class minimum")] = 0.0
    continue_rule: Annotated[str, one_of(P1_CONTINUE_RULES)] = "estimate"
    below_chance_strata: Annotated[str, one_of(P1_BELOW_CHANCE_RULES)] = "off"


@dataclass(frozen=True)
class P2Params:
    metric: str
    window_days: Days
    time_column: Annotated[str, one_of(TIME_COLUMNS)]
    feature_cc_types: tuple[str, ...]
    feature_merged_pr: bool
    feature_direct_commits: bool
    non_feature_cc_types: tuple[str, ...]
    exclude_fix_like_introducers: bool
    exclude_bulk_introducers: bool
    exclude_merge_introducers: bool
    non_code_paths: Globs
    test_paths: Globs
    cosmetic_lint_message: Regex
    cosmetic_typo_message: Regex
    risk_threshold: Annotated[float, within("[0, 1]")]
    smallest_useful_share: Annotated[float, within("(0, 1)")]
    confidence_level: Level
    min_signals: Annotated[int, at_least(1)]
    labels_paths: RelativePaths
    min_labelled_for_precision: Annotated[int, at_least(0)]
    rules: tuple[Rule, ...]
    # a fix or revert whose every code line only sets a version string is a release, not a fix
    exclude_version_bumps: bool = False
    # regex on the subject of a fix/revert that changes only tests: it adds a test ("" = off)
    new_test_message: Regex = ""
    # typo words also decide when every code line the loaded diff changes is text-only
    # (fix_changes.text_lines: inside string literals or markup text)
    cosmetic_typo_text_only: bool = False
    # label files (a subset of labels_paths) judged after the rules were frozen: reported apart
    holdout_labels_paths: RelativePaths = ()
    # CI results as data (ci_runs): conclusions that mean CI failed; () = ignore ci_runs
    ci_failed_conclusions: Annotated[tuple[str, ...], failed_conclusions] = (
        "failure",
        "timed_out",
        "startup_failure",
        "error",
    )
    # the fix's diff as CI evidence: a test the fix adds or changes beside the code it repairs
    # (experiments/p2/buckets.py fix_tests) means no check caught the failure when it landed;
    # "off": not read (the files before the key)
    ci_fix_test: Annotated[str, one_of(FIX_TEST_RULES)] = "off"
    # `reflect p2 sheet`: signals drawn per P2 bucket for gate labelling, and the draw's seed
    gate_sample_per_bucket: Annotated[int, at_least(1)] = 20
    gate_sample_seed: Annotated[int, at_least(0)] = 20261123
    # an independent second rater of the counted signals (is_failure + gate_label), and the
    # third readings of the raters' disagreements: agreement, consensus and bucket precision
    second_rater_labels_paths: RelativePaths = ()
    adjudication_paths: RelativePaths = ()
    # the verdict statistic: the only-self-reflection share gate-corrected (double sampling,
    # experiments/p2/gates.py), precision-corrected, or raw
    # (default: the statistic of the files written before the key existed)
    share_statistic: Annotated[str, one_of(P2_SHARE_STATISTICS)] = "precision-corrected"
    # the team's own gate labels of its signals (the second rater's columns); () = none
    gate_labels_paths: RelativePaths = ()
    # P2's bucket of each signal the shipped gate labels judge: the transported matrix
    gate_label_buckets_paths: RelativePaths = ()
    # fewer labelled signals in a bucket (with unlabelled ones) -> the pooled row; fewer
    # labelled judged signals in all -> the transported matrix
    gate_min_labelled: Annotated[int, at_least(1)] = 10
    gate_bootstrap_resamples: Annotated[
        int, at_least(100, "a percentile interval needs its tails")
    ] = 4000
    gate_bootstrap_seed: Annotated[int, at_least(0)] = 0
    # a confirmatory verdict needs, per repository, this many of its own gate labels of signals
    # drawn by the seeded sampler, this many in each bucket that holds signals (all of a smaller
    # one), each by this many raters (experiments/p2/standing.py); fewer -> EXPLORATORY
    own_labels_min_signals: Annotated[int, at_least(1)] = 40
    own_labels_min_per_bucket: Annotated[int, at_least(1)] = 10
    own_labels_min_raters: Annotated[int, at_least(1)] = 2
    # signal hygiene (load/git/kinds.py, the one home of bot / bump / release): such a fix or
    # revert is not a repair of earlier work; the patterns of each rule
    exclude_bots: bool = False
    exclude_dependency_bumps: bool = False
    exclude_releases: bool = False
    bot_identity: Regex = DEFAULT_KIND_RULES.bot_identity
    bot_message: Regex = DEFAULT_KIND_RULES.bot_message
    bump_scopes: tuple[str, ...] = DEFAULT_KIND_RULES.bump_scopes
    bump_message: Regex = DEFAULT_KIND_RULES.bump_message
    lockfile_paths: Globs = DEFAULT_KIND_RULES.lockfile_paths
    manifest_paths: Globs = DEFAULT_KIND_RULES.manifest_paths
    release_message: Regex = DEFAULT_KIND_RULES.release_message
    # a fix whose introducing commit is an earlier fix in the window: "failure-of-first-fix"
    # (counted as a failure of that fix, a chain once) or "excluded" (the files before the key)
    fix_of_fix: Annotated[str, one_of(FIX_OF_FIX)] = "excluded"
    # reverts later than window_days after their target are not counted (files before: False)
    revert_window: bool = False
    # files that never make the introducing change a review surface by themselves (lockfiles,
    # manifests, bundler configs, docs): the risk floor of the human-review rule is read on
    # the introducing commit's other files (() = every file, the files before the key)
    review_surface_ignore_paths: Globs = ()

    @property
    def kind_rules(self) -> KindRules:
        """The registered patterns of the bot / bump / release rules."""
        return KindRules(
            self.bot_identity,
            self.bot_message,
            self.bump_scopes,
            self.bump_message,
            self.lockfile_paths,
            self.manifest_paths,
            self.release_message,
        )

    # how a subject's fix words make a commit fix-like for P2 (load/git/signals.py FIX_WORDINGS):
    # "word" anywhere (the stored commits.is_fix_like; the files before the key), "verb" only
    # where they act as a verb
    fix_wording: Annotated[str, one_of(FIX_WORDINGS)] = "word"
    # also run P2 under the other fix_wording and report its verdict beside the registered one
    # (details.fix_wording.other_reading and a note); reporting only, never the verdict
    fix_wording_sensitivity: bool = False


@dataclass(frozen=True)
class LinkRule:
    """P3: links whose kind matches ``kind`` (regex, case-insensitive) in ``direction``
    (inward | outward, as the task's own record lists them) count against the task."""

    kind: Regex
    direction: Annotated[str, one_of(("inward", "outward"))]


@dataclass(frozen=True)
class P3Params:
    metric: str
    window_days: Days
    min_follow_up_days: Days
    as_of: Annotated[str, data_or_instant]
    confidence_level: Level
    smallest_useful_fraction: Annotated[float, within("(0, 1]")]
    min_tasks: int
    completion_event_kinds: tuple[str, ...]
    required_channels: Annotated[tuple[str, ...], distinct_channels]
    reopen_event_kinds: tuple[str, ...]
    reopen_status_pattern: Regex
    verified_pattern: Regex
    verified_event_kinds: tuple[str, ...]
    commit_signals: bool
    regression_links: tuple[LinkRule, ...]
    # a reopen within this many minutes of a close makes the close accidental: the close is no
    # completion and the reopen no signal
    accidental_close_minutes: Annotated[int, at_least(0, "0: no close is accidental")]
    # cross-reference polarity: a mention counts only from a record in the data, filed at or
    # after the task's completion, whose title or labels match this (case-insensitive)
    cross_reference_problem_pattern: Regex
    # cross-reference signals: event kinds, and a regex their detail must match; () = off
    cross_reference_kinds: tuple[str, ...] = ()
    cross_reference_pattern: Regex = "^issue "


@dataclass(frozen=True)
class AgentVsHumanParams:
    """Exploratory: agent-authored vs human commits (experiments/agent_vs_human/)."""

    span: Annotated[str, one_of(AGENT_VS_HUMAN_SPANS)]
    time_column: Annotated[str, one_of(TIME_COLUMNS)]
    follow_up_days: Days
    confidence_level: Level
    min_group_commits: Annotated[int, at_least(1)]
    exclude_cosmetic_fixes: bool
    bootstrap_resamples: Annotated[int, at_least(1)]
    seed: int
    # a fix by the same author and agent within this many hours of the commit it fixes is the
    # session at work, reported apart, not counted as a fix (0: off, the files before the key)
    same_session_hours: Annotated[int, at_least(0)] = 0
    # the power at which each difference's smallest detectable size is stated
    power: Level = 0.8


@dataclass(frozen=True)
class SeenData:
    """Data read while the registration was written: for them its rules are not out of sample,
    so a run whose data contain any of them is exploratory (:func:`mark_seen`).

    Each field holds markers, not the data: a repository's root and newest commits and a
    1-in-256 sample of its commits (SHAs that start with ``00``), a board's project keys, a
    label corpus's record markers that start with ``00``: the SHA-256 of a record's key, the
    values of P1's cluster and strata columns (question and model; ``sql/experiments/
    seen_labels.sql``), so the same records with fields added or dropped are still found, and
    any sizeable part of the corpus holds some of them."""

    git_commits: tuple[str, ...] = ()
    board_projects: tuple[str, ...] = ()
    label_keys: tuple[str, ...] = ()


@dataclass(frozen=True)
class Preregistration:
    """Parameters of a run, the file they came from, and whether the run is exploratory."""

    p1: P1Params
    p2: P2Params
    p3: P3Params
    agent_vs_human: AgentVsHumanParams
    path: str
    sha256: str
    version: int
    #: [seen]: optional (a file without it names no data as seen)
    seen: SeenData = SeenData()
    overrides: Mapping[str, Any] = field(default_factory=dict)
    exploratory: bool = False
    #: why the run is exploratory (the file vs the lock, then each changed override)
    reasons: tuple[str, ...] = ()
    #: the file compared with the lock (None: loaded without the check, e.g. by freeze)
    registration: Registration | None = None

    def provenance(self) -> dict[str, Any]:
        """The ``preregistration`` block of results.json (its ``registration`` entry becomes
        the top-level ``registration`` block)."""
        doc: dict[str, Any] = {
            "path": self.path,
            "sha256": self.sha256,
            "overrides": {k: _jsonable(v) for k, v in self.overrides.items()},
            "exploratory": self.exploratory,
            "exploratory_reasons": list(self.reasons),
        }
        if self.registration is not None:
            doc["registration"] = self.registration.to_dict()
        return doc


SECTIONS: dict[str, type[Any]] = {
    "p1": P1Params,
    "p2": P2Params,
    "p3": P3Params,
    "agent_vs_human": AgentVsHumanParams,
    "seen": SeenData,
}
#: Sections a file may leave out (their defaults apply).
OPTIONAL_SECTIONS = frozenset({"seen"})


def registered_preregistration_path() -> Path:
    """The registered file: the checkout's ``preregistration.toml``, else the wheel's copy.

    Its sibling ``preregistration.lock`` is the lock every run is compared with.
    """
    checkout = Path(__file__).resolve().parents[3] / FILE_NAME
    if checkout.is_file():
        return checkout
    packaged = resources.files("agent_reflection").joinpath(f"data/{FILE_NAME}")
    if packaged.is_file():
        return Path(str(packaged))
    raise InvalidPreregistration(
        f"no registered {FILE_NAME} (looked at {checkout} and the installed package); "
        "reinstall agent-reflection or run from its checkout"
    )


def resolve_preregistration(
    path: str | os.PathLike[str] | None = None,
    *,
    cwd: Path | None = None,
    registered: Path | None = None,
) -> tuple[Path, str]:
    """(the effective file, the route that chose it). One rule, first match wins:

    1. ``--prereg FILE`` (``path``);
    2. ``$REFLECT_PREREGISTRATION``;
    3. ``preregistration.toml`` in the working folder (``cwd``, default the current one);
    4. the registered file (``registered``, default :func:`registered_preregistration_path`).
    """
    if path is not None and str(path) != "":
        return Path(path).resolve(), ROUTE_FLAG
    env = os.environ.get(PREREG_ENV)
    if env:
        return Path(env).resolve(), ROUTE_ENV
    local = (cwd if cwd is not None else Path.cwd()) / FILE_NAME
    if local.is_file():
        return local.resolve(), ROUTE_WORKING_FOLDER
    return registered or registered_preregistration_path(), ROUTE_REGISTERED


def load_preregistration(path: str | os.PathLike[str] | None = None) -> Preregistration:
    """Read, validate and hash a pre-registration file (no lock check: see load_for_run);
    without ``path``, the file :func:`resolve_preregistration` chooses."""
    p = Path(path) if path is not None else resolve_preregistration(None)[0]
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise InvalidPreregistration(f"{p}: cannot read the pre-registration ({exc})") from None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise InvalidPreregistration(f"{p}: not valid TOML ({exc})") from None
    return parse_preregistration(data, source=str(p), sha256=hashlib.sha256(raw).hexdigest())


def parse_preregistration(data: Mapping[str, Any], *, source: str, sha256: str) -> Preregistration:
    check_keys(data, {"version", *SECTIONS}, source, error=InvalidPreregistration)
    version = data.get("version")
    if version != 1:
        raise InvalidPreregistration(f"{source}: version must be 1, got {version!r}")
    parsed: dict[str, Any] = {}
    for name, cls in SECTIONS.items():
        section = data.get(name)
        if section is None and name in OPTIONAL_SECTIONS:
            continue
        if not isinstance(section, dict):
            raise InvalidPreregistration(f"{source}: missing table [{name}]")
        where = f"{source}: [{name}]"
        _refuse_retired(name, section, where)
        if name == "p2":  # its rules take the conditions P2 registers (p2/buckets.py)
            if "rules" not in section:
                raise InvalidPreregistration(f"{where}: missing key 'rules'")
            p2 = build(cls, {**section, "rules": []}, where, error=InvalidPreregistration)
            parsed[name] = replace(p2, rules=parse_rules(section["rules"], where))
            _check_section(parsed[name], where)
            continue
        parsed[name] = build(
            cls, section, where, error=InvalidPreregistration, check=_check_section
        )
    return Preregistration(**parsed, path=source, sha256=sha256, version=1)


def parse_rules(tables: Any, where: str) -> tuple[Rule, ...]:
    """``[[p2.rules]]``, each table read by P2's rule parser
    (:func:`~agent_reflection.experiments.p2.buckets.parse_rule`: the bucket and the
    conditions P2 registers)."""
    if not isinstance(tables, list | tuple):
        raise InvalidPreregistration(f"{where}: rules must be a list of [[p2.rules]] tables")
    rules = []
    for i, table in enumerate(tables):
        at = f"{where}.rules[{i}]"
        if not isinstance(table, Mapping):
            raise InvalidPreregistration(f"{at} must be a table")
        try:
            rules.append(parse_rule(table))
        except ValueError as exc:
            raise InvalidPreregistration(f"{at}: {exc}") from None
    return tuple(rules)


def _refuse_retired(section: str, table: Mapping[str, Any], where: str) -> None:
    for key, why in RETIRED_KEYS.get(section, {}).items():
        if key in table:
            raise InvalidPreregistration(f"{where}: {key} is a retired key: {why}")


def apply_overrides(prereg: Preregistration, overrides: Mapping[str, Any]) -> Preregistration:
    """Parameters with ``{"p1.high_confidence_threshold": 0.7, ...}`` applied.

    Keys are ``section.key``. Values are validated like the file's. The result is
    exploratory when any value differs from the file (an override equal to it is harmless).
    """
    sections = {n: getattr(prereg, n) for n in SECTIONS}
    exploratory = prereg.exploratory
    reasons = list(prereg.reasons)
    applied: dict[str, Any] = dict(prereg.overrides)
    for dotted, value in overrides.items():
        section, _, key = dotted.partition(".")
        if section not in SECTIONS or not key:
            raise InvalidPreregistration(
                f"override {dotted!r}: name it as section.key, e.g. p1.high_confidence_threshold"
            )
        _refuse_retired(section, {key: value}, f"override {dotted!r}: [{section}]")
        current = sections[section]
        names = {f.name: f for f in fields(current)}
        if key not in names:
            raise InvalidPreregistration(
                f"override {dotted!r}: [{section}] has no key {key!r}; known: {sorted(names)}"
            )
        if (section, key) == ("p2", "rules"):
            new_value: Any = parse_rules(value, f"override {dotted}")
        else:
            new_value = coerce_field(
                type(current),
                key,
                value,
                f"override {dotted}",
                error=InvalidPreregistration,
                check=_check_section,
            )
        if new_value != getattr(current, key):
            exploratory = True
            reasons.append(
                f"override {dotted} = {_jsonable(new_value)!r} differs from the file's "
                f"{_jsonable(getattr(current, key))!r}"
            )
        sections[section] = replace(current, **{key: new_value})
        _check_section(sections[section], f"override {dotted}: [{section}]")
        applied[dotted] = new_value
    return replace(
        prereg, **sections, overrides=applied, exploratory=exploratory, reasons=tuple(reasons)
    )


def load_for_run(
    path: str | os.PathLike[str] | None,
    overrides: Mapping[str, Any],
    *,
    registered: Path | None = None,
    code: Mapping[str, str] | None = None,
    notebooks_from: str = "",
) -> Preregistration:
    """The parameters of a run: the effective file, checked against the lock, plus overrides.

    ``path`` is ``--prereg`` (None: resolved by :func:`resolve_preregistration`).
    ``registered`` is the registered file (default :func:`registered_preregistration_path`);
    only its sibling lock is consulted. ``code`` is the analysis code the run executes
    (:mod:`~agent_reflection.experiments.analysis_code`; None: not compared), its notebooks
    taken from ``notebooks_from``.
    The run is exploratory when the file's SHA-256 is not the lock's newest, when there is no
    valid lock, when the code differs from the code the lock registers, or when an override
    changes a value; ``reasons`` says which.
    """
    registered_file = registered if registered is not None else registered_preregistration_path()
    effective, chosen_by = resolve_preregistration(path, registered=registered_file)
    prereg = load_preregistration(effective)
    try:
        is_registered_file = effective.samefile(registered_file)
    except OSError:
        is_registered_file = False
    registration = compare(
        route=chosen_by,
        path=prereg.path,
        sha256=prereg.sha256,
        lock_path=lock_path_for(registered_file),
        is_registered_file=is_registered_file,
        code=code,
        notebooks_from=notebooks_from,
    )
    prereg = replace(
        prereg,
        registration=registration,
        reasons=registration.reasons,
        exploratory=not registration.matches,
    )
    return apply_overrides(prereg, overrides)


def _check_section(obj: Any, where: str) -> None:
    """A section's (or a table's in it) declared checks, then the checks across its keys."""
    hints = typing.get_type_hints(type(obj), include_extras=True)
    for f in fields(obj):
        for check in getattr(hints[f.name], "__metadata__", ()):
            problem = check(getattr(obj, f.name))
            if problem is not None:
                raise InvalidPreregistration(f"{where}: {f.name} {problem}")
    if isinstance(obj, P2Params):
        outside = [h for h in obj.holdout_labels_paths if h not in obj.labels_paths]
        shared = [path for path in obj.second_rater_labels_paths if path in obj.labels_paths]
        shipped = [path for path in obj.gate_labels_paths if path in obj.second_rater_labels_paths]
        second = bool(obj.second_rater_labels_paths)
        # what is wrong -> whether it is; the first that is wrong is the error
        problems = {
            f"holdout_labels_paths {outside} must also be listed in labels_paths": outside,
            f"second_rater_labels_paths {shared} must not be in labels_paths (the first "
            "rater's labels): the raters are compared, not pooled": shared,
            "adjudication_paths needs second_rater_labels_paths (it adjudicates their "
            "disagreements with labels_paths)": obj.adjudication_paths and not second,
            f"gate_labels_paths {shipped} are the shipped second rater's "
            "(second_rater_labels_paths): list the team's own gate labels here": shipped,
            "gate_label_buckets_paths needs second_rater_labels_paths (it gives P2's bucket of "
            "each signal those files label)": obj.gate_label_buckets_paths and not second,
            "[[p2.rules]] must list at least one rule": not obj.rules,
            "the last rule must have no conditions (a catch-all), so every counted signal gets "
            "a bucket": obj.rules and obj.rules[-1].conditions,
        }
        for problem, found in problems.items():
            if found:
                raise InvalidPreregistration(f"{where}: {problem}")
    elif isinstance(obj, P3Params):
        switched_off = {
            "commits": not obj.commit_signals,
            "regression-link": not obj.regression_links,
            "cross-reference": not obj.cross_reference_kinds,
        }
        off = [c for c in obj.required_channels if switched_off.get(c)]
        if off:
            raise InvalidPreregistration(
                f"{where}: required channel(s) {off} are switched off (commit_signals = false, "
                "no [[p3.regression_links]] or cross_reference_kinds = []): no source could ever "
                "carry them"
            )


def _jsonable(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, Rule):
        return _jsonable(value.to_dict())
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {k: _jsonable(v) for k, v in dataclasses.asdict(value).items()}
    return value


def params_dict(params: Any) -> dict[str, Any]:
    """A section's parameters as plain JSON-able data (for results.json)."""
    return {f.name: _jsonable(getattr(params, f.name)) for f in fields(params)}


# --- a run's results against the registration -------------------------------------------------


@dataclass(frozen=True)
class ParameterDifference:
    """A parameter whose value in a run differs from the registered file's."""

    parameter: str  # section.key
    used: Any
    registered: Any

    def to_dict(self) -> dict[str, Any]:
        return {"parameter": self.parameter, "used": self.used, "registered": self.registered}

    def reason(self) -> str:
        return (
            f"parameter {self.parameter} = {self.used!r} is not the registered {self.registered!r}"
        )


def parameter_differences(
    experiment: str, used: Mapping[str, Any], registered: Preregistration
) -> tuple[ParameterDifference, ...]:
    """Each parameter of ``used`` (results.json's ``parameters``, as the experiment ran) that
    differs from ``registered``'s section ``experiment``, or that it does not have."""
    expected = params_dict(getattr(registered, experiment))
    missing = object()
    out = []
    for key in sorted(set(used) | set(expected)):
        value, want = used.get(key, missing), expected.get(key, missing)
        if _jsonable(value) != want:
            out.append(
                ParameterDifference(
                    f"{experiment}.{key}",
                    None if value is missing else value,
                    None if want is missing else want,
                )
            )
    return tuple(out)


def amended_after_loads(lock: Lock, loads: Sequence[Mapping[str, Any]]) -> str | None:
    """Why a registration made after the data it judges were loaded is not pre-registered for
    them, or None. ``loads`` are the ``loads`` rows behind the tables a run read (results.json
    ``data``: load_id, source, origin, finished_at); the registration in force is the lock's
    newest entry that changed the registered file (:attr:`Lock.newest_rules`: an entry that
    only registers new code changes no rule), and a load that finished in its second (UTC,
    whole seconds) counts as before it."""
    number, newest = lock.newest_rules
    # both are whole seconds: a load that finished in the entry's second may have come first,
    # so it counts as before (a registration is not given the benefit of the doubt)
    earlier = sorted(
        (ld for ld in loads if ld.get("finished_at") and str(ld["finished_at"]) <= newest.at),
        key=lambda ld: str(ld["finished_at"]),
    )
    if not earlier:
        return None
    first = earlier[0]
    what = f"amended (amendment #{number})" if number else "frozen"
    more = f" and {len(earlier) - 1} more load(s)" if len(earlier) > 1 else ""
    return (
        f"the registration in force was {what} {newest.at}, after data "
        f"it judges were loaded: load {first.get('load_id')} ({first.get('source')}, "
        f"{first.get('origin')}) finished {first['finished_at']}{more}; a registration written "
        "after its data were loaded is not pre-registered for them (data loaded after it "
        "confirm)"
    )


# --- seen data --------------------------------------------------------------------------------

Experiment = Literal["p1", "p2", "p3"]


@dataclass(frozen=True)
class SeenMatch:
    """Data of one repository, board project or label corpus that the registration saw."""

    what: str  # repository | board project | label corpus
    name: str  # the repository, project or corpus as loaded
    present: int  # markers (commits, labels) or tasks found
    example: str  # one of them

    def describe(self) -> str:
        """e.g. "repository 'flask' (19 of the [seen] marker commits, e.g. 001100bc0b3a)"."""
        found = {
            "repository": f"{self.present:,} of the [seen] marker commits, e.g. "
            f"{self.example[:12]}",
            "board project": f"{self.present:,} tasks, e.g. {self.example}",
            "label corpus": f"{self.present:,} of the [seen] marker records, e.g. "
            f"{self.example[:12]}",
        }[self.what]
        return f"{self.what} {self.name!r} ({found})"


def seen_in(
    con: duckdb.DuckDBPyConnection,
    prereg: Preregistration,
    experiment: Experiment,
    *,
    corpus: str | None = None,
) -> tuple[SeenMatch, ...]:
    """The seen data among the tables ``experiment`` reads (P1: the labels of ``corpus``,
    every corpus when None; P2: commits; P3: the board projects)."""
    from agent_reflection.store.db import read_sql

    seen = prereg.seen
    # (query, the table it reads, markers, parameters)
    checks: list[tuple[str, str, tuple[str, ...], dict[str, object]]] = []
    if experiment == "p1" and prereg.p1.label_source == "corpus":
        key: dict[str, object] = {
            "corpus": corpus,
            "key_columns": list(label_key_columns(prereg.p1)),
        }
        checks.append(("experiments/seen_labels.sql", "labels", seen.label_keys, key))
    elif experiment == "p2":
        checks.append(("experiments/seen_commits.sql", "commits", seen.git_commits, {}))
    elif experiment == "p3":
        checks.append(("experiments/seen_projects.sql", "tasks", seen.board_projects, {}))
    checks = [c for c in checks if c[2]]
    if not checks:
        return ()
    tables = {t for (t,) in con.execute(read_sql("experiments/seen_tables.sql")).fetchall()}
    found: list[SeenMatch] = []
    for query, table, markers, params in checks:
        if table not in tables:
            continue
        rows = con.execute(read_sql(query), {"markers": list(markers), **params}).fetchall()
        found.extend(SeenMatch(str(w), str(n), int(p), str(e)) for w, n, p, e in rows)
    return tuple(found)


def label_key_columns(p1: P1Params) -> tuple[str, ...]:
    """The columns whose values identify a labelled record: P1's declared cluster and strata
    columns of corpus labels (a question answered by a model)."""
    return tuple(c for c in (p1.cluster_column, p1.strata_column) if c)


def analysis_unit(p1: P1Params) -> dict[str, str]:
    """P1's declared analysis unit for its label source: ``{"strata": column, "cluster":
    column}`` ("" where the registration declares none)."""
    if p1.label_source == "loop":
        return {"strata": p1.loop_strata_column, "cluster": p1.loop_cluster_column}
    return {"strata": p1.strata_column, "cluster": p1.cluster_column}


def seen_label_markers(con: duckdb.DuckDBPyConnection, p1: P1Params, corpus: str) -> list[str]:
    """The [seen] ``label_keys`` markers of ``corpus`` as loaded in ``con``: the record keys'
    SHA-256 that start with ``00``, sorted (how the registration's were made)."""
    from agent_reflection.store.db import read_sql

    rows = con.execute(
        read_sql("experiments/seen_label_markers.sql"),
        {"corpus": corpus, "key_columns": list(label_key_columns(p1))},
    ).fetchall()
    return [str(m) for (m,) in rows]


def mark_seen(
    con: duckdb.DuckDBPyConnection,
    prereg: Preregistration,
    experiment: Experiment,
    *,
    corpus: str | None = None,
) -> Preregistration:
    """``prereg``, exploratory with a reason naming each seen repository, project or corpus
    when the data ``experiment`` reads include any."""
    matches = seen_in(con, prereg, experiment, corpus=corpus)
    if not matches:
        return prereg
    reason = (
        f"the data include {'; '.join(m.describe() for m in matches)}, which the "
        "pre-registration's [seen] table names as read while it was written: its rules are "
        "not out of sample for these data (other data confirm)"
    )
    return replace(prereg, exploratory=True, reasons=(*prereg.reasons, reason))


# --- power -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class PowerRow:
    """One experiment's registered effect and the sample it needs."""

    experiment: str
    statistic: str
    smallest_useful: float
    null_value: float
    confidence_level: float
    power: float
    size: SampleSize
    unit: str
    note: str


def minimum_sample(p: P1Params) -> SampleSize:
    """P1's rows per class a verdict needs, derived from the smallest useful AUC and the power
    (the null: an AUC of 0.5). Here, not with P1's analysis, so that ``reflect status`` does
    not import pandas to say it."""
    from agent_reflection.stats.power import auc_sample_size

    return auc_sample_size(
        p.smallest_useful_auc, confidence_level=p.confidence_level, power=p.power
    )


def power_table(prereg: Preregistration) -> tuple[PowerRow, ...]:
    """P1, P2 and P3's minimum samples from their registered smallest useful effects.

    P2's ``smallest_useful_share`` and P3's ``smallest_useful_fraction`` are required keys of
    their sections, each with its own ``confidence_level``; ``power`` is registered in [p1]
    only (said in the row's note).
    """
    from agent_reflection.stats.power import proportion_sample_size

    p1 = prereg.p1
    rows = [
        PowerRow(
            "p1",
            "stratified AUC (self-rated-high subset)",
            p1.smallest_useful_auc,
            0.5,
            p1.confidence_level,
            p1.power,
            minimum_sample(p1),
            "rows per class",
            "Hanley-McNeil variance",
        )
    ]
    for name, key, statistic, unit in (
        ("p2", "smallest_useful_share", "only-self-reflection share", "failure signals"),
        ("p3", "smallest_useful_fraction", "detectable fraction", "completed tasks"),
    ):
        section = getattr(prereg, name)
        useful, level = getattr(section, key), section.confidence_level
        size = proportion_sample_size(useful, confidence_level=level, power=p1.power)
        note = "score (Wilson) test; power from [p1]"
        rows.append(PowerRow(name, statistic, useful, 0.0, level, p1.power, size, unit, note))
    return tuple(rows)
