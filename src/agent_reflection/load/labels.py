"""Load a labelled calibration corpus (JSONL or CSV of ``{confidence, correct}``) into ``labels``.

Optional group columns (any other string column, e.g. ``model``) are kept in ``groups`` for
per-group AUC. Bad records go to ``rejected`` with the reason; loading twice changes nothing.
Files may be gzip-compressed (``.gz``). Text is decoded by :mod:`agent_reflection.load.text`
(byte-order marks, UTF-16/32, CRLF, Latin-1/Windows-1252 read as such, or ``--encoding``). A
damaged file keeps every record before the damage: a truncated ``.gz``, a line over the
length limit, a CSV row with the wrong number of fields, binary data are rejected with the
reason.

A file that cannot be read to its end (a truncated or corrupt ``.gz``, binary data) fails the
load (:meth:`LoadRun.reject` with ``file_error``), keeping what was read before the damage.
A CSV/TSV header must have the columns ``confidence`` and ``correct`` (or those ``mapping``
names for them: ``--map confidence=p``), else nothing is loaded and :class:`MissingLabelColumns`
lists the columns found.
"""

from __future__ import annotations

import csv
import gc
import json
import math
import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import orjson
import pyarrow as pa

from agent_reflection.errors import ReflectionError, json_error_text
from agent_reflection.load.board.tabular import guess_column
from agent_reflection.load.text import (
    READ_ERRORS,
    LongLine,
    TextSource,
    check_encoding,
    csv_lines,
    is_binary,
    read_error,
    text_kind,
)
from agent_reflection.names import name_text
from agent_reflection.store.db import LoadSummary, begin_load, read_sql, registered

TRUE = {"true", "1", "yes", "y", "t", "correct"}
FALSE = {"false", "0", "no", "n", "f", "incorrect", "wrong"}
BOOL_WORDS = TRUE | FALSE
#: Keys that are never group columns. (A ``question_id`` is kept: P1 clusters rows by it.)
NOT_GROUPS = {"confidence", "correct", "confidence_raw", "id"}
#: One decoder for every line (json.loads re-checks its arguments on each call).
_decode_json = json.JSONDecoder().decode
#: The record key's canonical text, as the first loads wrote it: sorted keys, no spaces,
#: non-ASCII escaped (keys of corpora loaded before must stay the same).
_canonical = json.JSONEncoder(sort_keys=True, separators=(",", ":"), default=str).encode
#: Names of JSON-lines files (``.gz`` removed).
JSON_SUFFIXES = (".jsonl", ".ndjson", ".json")
#: Largest CSV field accepted (Python's default, 128 KiB, is too small for free-text columns).
CSV_FIELD_LIMIT = 1 << 26


#: The fields every record needs; ``--map FIELD=COLUMN`` names another column for one.
REQUIRED = ("confidence", "correct")
#: Column names that often hold a required field, for the ``--map`` hint of a header mismatch.
_SYNONYMS = {
    "confidence": ("conf", "probability", "prob", "p", "score", "p_correct", "verbalized"),
    "correct": ("is_correct", "label", "y", "outcome", "success", "passed", "right", "accuracy"),
}


class UnreadableLabels(ReflectionError, ValueError):
    """A labels file cannot be opened or has an unknown format."""


class MissingLabelColumns(UnreadableLabels):
    """A CSV/TSV labels file's header lacks ``confidence`` or ``correct`` (or the columns
    ``--map`` names for them): no row could load."""

    def __init__(self, path: Path, missing: dict[str, str], header: list[str]) -> None:
        self.missing, self.header = missing, header
        hints = " ".join(
            f"--map {ours}={guess_column(ours, header, _SYNONYMS)}" for ours in missing
        )
        super().__init__(
            f"{path}: the header has no column(s) {' and '.join(map(repr, missing.values()))} "
            f"(needed: confidence, a number in [0, 1], and correct, true/false); found "
            f"{header[:40]}. Fix: name those columns confidence and correct, or tell which "
            f"column holds each, e.g. {hints}"
        )


def check_mapping(mapping: Mapping[str, str] | None) -> dict[str, str]:
    """``--map``'s FIELD -> COLUMN pairs, checked: the :data:`REQUIRED` fields and the columns
    the registration declares as P1's analysis unit (:func:`unit_fields`: its strata and
    cluster columns, e.g. ``--map model=llm``)."""
    mapping = dict(mapping or {})
    unknown = sorted(set(mapping) - set(REQUIRED))
    if unknown:  # the registration is read only for a field beyond the required ones
        fields = (*REQUIRED, *unit_fields())
        unknown = sorted(set(mapping) - set(fields))
        if unknown:
            raise UnreadableLabels(
                f"unknown field(s) in --map: {unknown}; the fields are: {', '.join(fields)} "
                "(every other column is kept as it is named)"
            )
    return {field: column for field, column in mapping.items() if column != field}


def unit_fields() -> tuple[str, ...]:
    """The columns the registration a run would use declares as P1's strata and cluster
    columns of labelled corpora, sorted: P1 reads them by these names."""
    from agent_reflection.experiments.registration import label_key_columns, load_preregistration

    return tuple(sorted(label_key_columns(load_preregistration().p1)))


def renamed(rec: dict[str, Any], mapping: Mapping[str, str]) -> dict[str, Any]:
    """``rec`` with each mapped column read as its field (``{"p": 0.9}`` with
    ``confidence=p`` -> ``{"confidence": 0.9}``): the source column is gone (no group), and a
    column already named like a mapped field is replaced, as ``--map`` on boards reads only
    the column it names."""
    sources = set(mapping.values())
    out = {k: v for k, v in rec.items() if k not in mapping and k not in sources}
    for field_name, column in mapping.items():
        if column in rec:
            out[field_name] = rec[column]
    return out


@dataclass(frozen=True)
class Unreadable:
    """The file cannot be read on from here (damage, binary data): a file-level reject."""

    reason: str


Item = tuple[int, str, dict[str, Any] | str | Unreadable]


def _records(source: TextSource, stem: str, required: dict[str, str]) -> Iterator[Item]:
    """(line, raw text, record or the reason it is no record) per record of ``source``;
    ``required``: field -> the CSV column that must hold it."""
    if is_binary(source.head, source.encoding):
        yield (
            1,
            source.head[:200].decode("latin-1"),
            Unreadable("binary data (NUL bytes), not a text labels file; check the file"),
        )
        return
    if stem.endswith(JSON_SUFFIXES):
        for i, line in source:
            if isinstance(line, LongLine):
                yield i, line.head, line.reason()
                continue
            if not line.strip():
                continue
            try:
                obj = _decode(line)
            except json.JSONDecodeError as exc:
                yield i, line, f"not valid JSON ({json_error_text(exc)})"
                continue
            yield i, line, obj if isinstance(obj, dict) else "a record must be a JSON object"
    else:
        yield from _csv_records(source, "\t" if stem.endswith(".tsv") else ",", required)


def _decode(line: str) -> Any:
    """The value of one JSON line: orjson's reading (about three times as fast), or the
    standard library's (its value, or its error message) where orjson refuses the line (NaN, a
    lone surrogate, a malformed line). orjson may read a record that is not :func:`_plain`
    otherwise (an integer past 64 bits becomes a float): :func:`load_labels` reads those again
    with the standard library."""
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        return _decode_json(line)


def _plain(rec: dict[str, Any]) -> bool:
    """Whether orjson writes ``rec``'s canonical text byte for byte as :data:`_canonical` does:
    flat values only, each float in the range where both write the same shortest digits
    without an exponent (Python's ``repr`` switches to one below 1e-4 and from 1e16)."""
    for value in rec.values():
        kind = type(value)
        if kind is float:
            if not (value == 0.0 or 1e-4 <= abs(value) < 1e16):
                return False
        elif kind is not str and kind is not bool and kind is not int and value is not None:
            return False
    return True


def canonical_text(rec: dict[str, Any], plain: bool | None = None) -> str:
    """``rec``'s canonical JSON (sorted keys, no spaces, non-ASCII escaped), whose SHA-256 is
    the record's identity: the same however the line was spaced or its keys ordered.
    ``plain``: :func:`_plain(rec)` when the caller knows it.

    orjson writes the same bytes for a plain record unless a string holds a non-ASCII
    character or DEL, which the standard library escapes and orjson does not."""
    if plain if plain is not None else _plain(rec):
        try:
            text = orjson.dumps(rec, option=orjson.OPT_SORT_KEYS)
        except TypeError:  # an integer past 64 bits (read by the standard library)
            return _canonical(rec)
        if text.isascii() and b"\x7f" not in text:
            return text.decode("ascii")
    return _canonical(rec)


def _read_through(source: TextSource, stem: str, required: dict[str, str]) -> Iterator[Item]:
    """:func:`_records`, then one reason for a file unreadable past some line (corrupt .gz)."""
    try:
        yield from _records(source, stem, required)
    except READ_ERRORS as exc:  # every record before the damage is kept
        yield source.lines_read + 1, "", Unreadable(read_error(exc, source.lines_read))


def _csv_records(source: TextSource, delimiter: str, required: dict[str, str]) -> Iterator[Item]:
    long_lines: list[tuple[int, LongLine]] = []

    csv.field_size_limit(max(csv.field_size_limit(), CSV_FIELD_LIMIT))
    reader = csv.reader(csv_lines(source, long_lines), delimiter=delimiter)
    header: list[str] | None = None
    while True:
        start = reader.line_num + 1
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            yield start, "", f"not a CSV record ({exc})"
            continue
        while long_lines:
            at, long = long_lines.pop(0)
            yield at, long.head, long.reason()
        if not row:
            continue  # a blank line is no record
        raw = delimiter.join(row)
        if header is None:
            header = row
            missing = {f: column for f, column in required.items() if column not in header}
            if missing:
                raise MissingLabelColumns(source.path, missing, header)
            continue
        if len(row) != len(header):
            yield start, raw, f"row has {len(row)} fields, the header has {len(header)}"
            continue
        yield start, raw, dict(zip(header, row, strict=True))
    for at, long in long_lines:
        yield at, long.head, long.reason()


def parse_record(rec: dict[str, Any]) -> tuple[float, bool, dict[str, str]]:
    """(confidence, correct, groups) or ValueError saying which field is wrong."""
    if "confidence" not in rec:
        raise ValueError("field 'confidence' is missing")
    if "correct" not in rec:
        raise ValueError("field 'correct' is missing")
    raw_c = rec["confidence"]
    try:
        if isinstance(raw_c, bool):
            raise TypeError
        conf = float(raw_c)
    except (TypeError, ValueError):
        raise ValueError(f"field 'confidence' must be a number in [0, 1], got {raw_c!r}") from None
    if not math.isfinite(conf) or not 0 <= conf <= 1:
        raise ValueError(
            f"field 'confidence' must be in [0, 1], got {raw_c!r} (divide percentages by 100)"
        )
    raw_y = rec["correct"]
    if isinstance(raw_y, bool):
        correct = raw_y
    elif isinstance(raw_y, int | float) and raw_y in (0, 1):
        correct = bool(raw_y)
    elif isinstance(raw_y, str) and raw_y.strip().lower() in BOOL_WORDS:
        correct = raw_y.strip().lower() in TRUE
    else:
        raise ValueError(f"field 'correct' must be true/false or 1/0, got {raw_y!r}")
    return conf, correct, _groups(rec)


def parse_usual(rec: dict[str, Any]) -> tuple[float, bool, dict[str, str]] | None:
    """:func:`parse_record`'s answer for the usual record, in one pass over its fields (half
    the time of the two): a float confidence in [0, 1], a boolean ``correct``, every field
    :func:`_plain`. None for any other record, which the full checks decide."""
    groups = {}
    for key, value in rec.items():
        kind = type(value)
        if kind is str:
            if value and key not in NOT_GROUPS:
                groups[key] = value
        elif kind is float:
            if not (value == 0.0 or 1e-4 <= abs(value) < 1e16):
                return None
        elif kind is not bool and kind is not int and value is not None:
            return None
    confidence = rec.get("confidence")
    correct = rec.get("correct")
    if type(confidence) is float and type(correct) is bool and 0.0 <= confidence <= 1.0:
        return confidence, correct, groups
    return None


def _groups(rec: dict[str, Any]) -> dict[str, str]:
    """The record's group columns: every non-empty string field but :data:`NOT_GROUPS`."""
    return {k: str(v) for k, v in rec.items() if isinstance(v, str) and v and k not in NOT_GROUPS}


#: Parsed rows turned into one Arrow record batch at a time (bounds the Python objects held).
BATCH_ROWS = 100_000
#: Records between two progress callbacks.
PROGRESS_EVERY = 10_000
#: The Arrow shape of ``sql/labels/insert_labels.sql``'s ``label_batch``.
LABEL_BATCH = pa.schema(
    [
        ("canonical", pa.string()),
        ("confidence", pa.float64()),
        ("correct", pa.bool_()),
        ("groups", pa.string()),
        ("line", pa.int32()),
    ]
)


def _batch(*columns: list[Any]) -> pa.RecordBatch:
    """Parsed rows, column by column in :data:`LABEL_BATCH`'s order, as one Arrow batch."""
    named = dict(zip(LABEL_BATCH.names, columns, strict=True))
    return pa.RecordBatch.from_pydict(named, schema=LABEL_BATCH)


@contextmanager
def _collection_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off while records are parsed: each record makes a few
    short-lived dicts (no cycles), and the collections they set off took a quarter of a
    1,000,000-row load. On again after, if it was on."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


def _format_hint(name: str, json_lines: bool, head: bytes) -> str | None:
    """Why every record of a file may have been rejected: its content is not what its name
    says (CSV named ``.jsonl``, JSON lines named ``.csv``)."""
    kind = text_kind(head)
    if json_lines and kind == "csv":
        return f"{name} looks like CSV, but its name says JSON lines: rename it to .csv"
    if not json_lines and kind == "json":
        return f"{name} looks like JSON, but its name says CSV: rename it to .jsonl"
    return None


def load_labels(
    con: duckdb.DuckDBPyConnection,
    path: str | os.PathLike[str],
    *,
    corpus: str | None = None,
    encoding: str | None = None,
    progress: Callable[[int], object] | None = None,
    mapping: Mapping[str, str] | None = None,
) -> LoadSummary:
    """Load one labels file; returns the reconciling summary.

    Records are parsed and validated one by one (every bad one is rejected with FILE:LINE and
    the reason); the valid rows go to DuckDB as one Arrow table in one INSERT, so a failed load
    adds no labels. The INSERT gives each row its key (the SHA-256 of its canonical JSON and
    its occurrence in the file) and skips the keys the corpus holds: a re-load adds nothing.
    ``progress(n)`` is called every :data:`PROGRESS_EVERY` records read.
    ``encoding`` (None: detect) follows :mod:`agent_reflection.load.text`; bytes that do not
    decode under an explicit encoding raise :class:`UndecodableText` and load nothing.
    ``mapping``: FIELD -> COLUMN (``{"confidence": "p"}``) for a file whose columns (or JSON
    keys) are named otherwise (:func:`renamed`); a CSV/TSV header without the required
    columns raises :class:`MissingLabelColumns` and loads nothing (the load is recorded as
    failed, the reason in ``rejected``).
    """
    p = Path(path)
    if not p.is_file():
        raise UnreadableLabels(f"{p}: no such labels file")
    stem = p.name.removesuffix(".gz")
    if not stem.endswith((*JSON_SUFFIXES, ".csv", ".tsv")):
        raise UnreadableLabels(
            f"{p}: unknown labels format; use .jsonl, .ndjson, .csv or .tsv (optionally .gz)"
        )
    check_encoding(encoding)  # an unknown name fails before a load is recorded
    rename = check_mapping(mapping)
    required = {f: rename.get(f, f) for f in REQUIRED}
    name = corpus or name_text(p.name).split(".")[0]
    where = name_text(p)
    with begin_load(con, "labels", where, fail_if_all_rejected=True) as run:
        batches: list[pa.RecordBatch] = []
        canonicals: list[str] = []
        confidences: list[float] = []
        corrects: list[bool] = []
        group_texts: list[str] = []
        lines: list[int] = []
        read = 0
        json_lines = stem.endswith(JSON_SUFFIXES)
        try:
            with TextSource(p, encoding) as source, _collection_paused():
                for line, raw, rec in _read_through(source, stem, required):
                    read += 1
                    if progress is not None and read % PROGRESS_EVERY == 0:
                        progress(PROGRESS_EVERY)
                    if isinstance(rec, str):
                        run.reject(f"{where}:{line}", raw, rec)
                        continue
                    if isinstance(rec, Unreadable):
                        run.reject(f"{where}:{line}", raw, rec.reason, file_error=True)
                        continue
                    if rename:
                        rec = renamed(rec, rename)
                    usual = parse_usual(rec)
                    if usual is not None:
                        conf, correct, groups = usual
                        plain = True
                    else:
                        plain = _plain(rec)
                        if not plain and json_lines:
                            rec = _decode_json(raw)  # as the standard library reads it (_decode)
                            if rename:
                                rec = renamed(rec, rename)
                        try:
                            conf, correct, groups = parse_record(rec)
                        except ValueError as exc:
                            run.reject(f"{where}:{line}", raw, f"{exc}; fix the record or drop it")
                            continue
                    canonicals.append(canonical_text(rec, plain))
                    confidences.append(conf)
                    corrects.append(correct)
                    # a JSON object of the group columns, read back with DuckDB's JSON
                    # functions (its spacing is free; loads before orjson wrote json.dumps's)
                    group_texts.append(orjson.dumps(groups).decode())
                    lines.append(line)
                    if len(canonicals) >= BATCH_ROWS:
                        batches.append(
                            _batch(canonicals, confidences, corrects, group_texts, lines)
                        )
                        canonicals, confidences, corrects, group_texts, lines = [], [], [], [], []
        except MissingLabelColumns as exc:  # the header: no row could load
            run.read += 1
            run.reject(where, None, str(exc))
            raise
        if progress is not None:
            progress(read % PROGRESS_EVERY)
        run.read += read
        run.detail["encoding"] = f"{source.encoding.codec} ({source.encoding.decided_by})"
        if source.fallback is not None:
            run.warn(source.fallback.note(p))
        run.warn_if_empty(p)
        if read and run.rejected == read:
            run.hint = _format_hint(p.name, json_lines, source.head)
        batches.append(_batch(canonicals, confidences, corrects, group_texts, lines))
        label_batch = pa.Table.from_batches(batches, schema=LABEL_BATCH)
        loaded = 0
        if label_batch.num_rows:
            with registered(con, label_batch=label_batch):
                row = con.execute(
                    read_sql("labels/insert_labels.sql"),
                    {"corpus": name, "source_file": where, "load_id": run.load_id},
                ).fetchone()
            loaded = int(row[0]) if row else 0
        run.loaded += loaded
        run.already_present += label_batch.num_rows - loaded
        run.detail["corpus"] = name
    return run.summary()
