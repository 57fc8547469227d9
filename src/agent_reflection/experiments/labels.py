"""Load a labelled calibration corpus (JSONL or CSV of ``{confidence, correct}``) into ``labels``.

Optional group columns (any other string column, e.g. ``model``) are kept in ``groups`` for
per-group AUC. Bad records go to ``rejected`` with the reason; loading twice changes nothing.
Files may be gzip-compressed (``.gz``).
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import json
import math
import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb

from agent_reflection.db import LoadSummary, begin_load
from agent_reflection.errors import ReflectionError

TRUE = {"true", "1", "yes", "y", "t", "correct"}
FALSE = {"false", "0", "no", "n", "f", "incorrect", "wrong"}
#: Keys that are never group columns. (A ``question_id`` is kept: P1 clusters rows by it.)
NOT_GROUPS = {"confidence", "correct", "confidence_raw", "id"}


class UnreadableLabels(ReflectionError, ValueError):
    """A labels file cannot be opened or has an unknown format."""


def _open_text(path: Path) -> io.TextIOBase:
    if path.name.endswith(".gz"):
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8")
    return open(path, encoding="utf-8", newline="")


def _records(path: Path) -> Iterator[tuple[int, str, dict[str, Any] | str]]:
    """(line, raw text, record or parse-error message)."""
    stem = path.name.removesuffix(".gz")
    if stem.endswith((".jsonl", ".ndjson", ".json")):
        with _open_text(path) as fh:
            for i, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as exc:
                    yield i, line, f"not valid JSON ({exc.msg} at column {exc.colno})"
                    continue
                yield i, line, obj if isinstance(obj, dict) else "a record must be a JSON object"
    elif stem.endswith((".csv", ".tsv")):
        with _open_text(path) as fh:
            reader = csv.DictReader(fh, delimiter="\t" if stem.endswith(".tsv") else ",")
            for row in reader:
                yield reader.line_num, json.dumps(row), dict(row)
    else:
        raise UnreadableLabels(
            f"{path}: unknown labels format; use .jsonl, .ndjson, .csv or .tsv (optionally .gz)"
        )


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
    elif isinstance(raw_y, str) and raw_y.strip().lower() in TRUE | FALSE:
        correct = raw_y.strip().lower() in TRUE
    else:
        raise ValueError(f"field 'correct' must be true/false or 1/0, got {raw_y!r}")
    groups = {
        k: str(v) for k, v in rec.items()
        if k not in NOT_GROUPS and isinstance(v, str) and v != ""
    }  # fmt: skip
    return conf, correct, groups


def load_labels(
    con: duckdb.DuckDBPyConnection,
    path: str | os.PathLike[str],
    *,
    corpus: str | None = None,
) -> LoadSummary:
    """Load one labels file; returns the reconciling summary."""
    p = Path(path)
    if not p.is_file():
        raise UnreadableLabels(f"{p}: no such labels file")
    name = corpus or p.name.split(".")[0]
    seen: Counter[str] = Counter()
    with begin_load(con, "labels", str(p)) as run:
        existing = {
            r[0] for r in con.execute(
                "SELECT record_key FROM labels WHERE corpus = ?", [name]
            ).fetchall()
        }  # fmt: skip
        rows: list[tuple[Any, ...]] = []
        try:
            for line, raw, rec in _records(p):
                run.read += 1
                if isinstance(rec, str):
                    run.reject(f"{p}:{line}", raw, rec)
                    continue
                try:
                    conf, correct, groups = parse_record(rec)
                except ValueError as exc:
                    run.reject(f"{p}:{line}", raw, f"{exc}; fix the record or drop it")
                    continue
                canon = json.dumps(rec, sort_keys=True, separators=(",", ":"), default=str)
                digest = hashlib.sha256(canon.encode()).hexdigest()
                seen[digest] += 1
                key = f"{digest}#{seen[digest]}"
                if key in existing:
                    run.already_present += 1
                    continue
                existing.add(key)
                rows.append((name, key, conf, correct, json.dumps(groups), str(p), line,
                             run.load_id))  # fmt: skip
                run.loaded += 1
        except (OSError, UnicodeDecodeError, EOFError, csv.Error) as exc:
            raise UnreadableLabels(f"{p}: cannot read ({exc})") from None
        if rows:
            con.executemany("INSERT INTO labels VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)
        run.detail["corpus"] = name
    return run.summary()
