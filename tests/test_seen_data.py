"""Data the registration saw: a run on them is exploratory, with a reason naming them."""

from __future__ import annotations

import hashlib
import json
import subprocess
from dataclasses import replace
from pathlib import Path

import duckdb
import pytest

from agent_reflection.experiments import notebook
from agent_reflection.experiments.p1.analysis import run_p1
from agent_reflection.experiments.p2.buckets import Rule
from agent_reflection.experiments.registration import (
    InvalidPreregistration,
    Preregistration,
    SeenData,
    label_key_columns,
    load_preregistration,
    mark_seen,
    parse_preregistration,
    seen_in,
    seen_label_markers,
)
from agent_reflection.load.git.history import load_git_history
from agent_reflection.load.labels import load_labels
from agent_reflection.store.db import connect
from session_repo import commit, new_repo


def _registration(**seen: tuple[str, ...]) -> Preregistration:
    return replace(load_preregistration(), seen=SeenData(**seen))


def _repository(con: duckdb.DuckDBPyConnection, root: Path, name: str) -> str:
    """A real one-commit repository loaded as ``name``; its commit's SHA."""
    repo = new_repo(root / name)
    sha = commit(repo, f"add {name}", "2025-01-01T00:00:00+00:00", {"x.py": name})
    load_git_history(con, repo, name=name, cache_dir=root / "cache")
    return sha


@pytest.fixture
def con() -> duckdb.DuckDBPyConnection:
    return connect(":memory:")


def test_commits_the_registration_saw_make_p2_exploratory(
    con: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    seen_sha = _repository(con, tmp_path, "theirs")
    _repository(con, tmp_path, "ours")
    prereg = _registration(git_commits=(seen_sha,))
    marked = mark_seen(con, prereg, "p2")
    assert marked.exploratory and not prereg.exploratory
    assert marked.reasons[-1].startswith(
        f"the data include repository 'theirs' (1 of the [seen] marker commits, e.g. "
        f"{seen_sha[:12]})"
    )
    assert "other data confirm" in marked.reasons[-1]
    # P1 and P3 read no commits: the same data leave them as registered
    assert mark_seen(con, prereg, "p1") == prereg
    assert mark_seen(con, prereg, "p3") == prereg


def test_data_the_registration_did_not_see_leave_the_run_registered(
    con: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    _repository(con, tmp_path, "ours")
    prereg = _registration(git_commits=("00" + "a" * 38,), board_projects=("KAFKA",))
    assert seen_in(con, prereg, "p2") == ()
    assert seen_in(con, prereg, "p3") == ()  # no tasks at all
    assert mark_seen(con, prereg, "p2") is prereg


def test_board_projects_are_matched_as_p3_groups_them(con: duckdb.DuckDBPyConnection) -> None:
    for ref, project, origin in (
        ("KAFKA-1", "KAFKA", "kafka.csv"),
        ("KAFKA-2", "KAFKA", "kafka.csv"),
        ("o/r#1", None, "o/r"),  # no project: P3 groups it by its origin
        ("OURS-1", "OURS", "ours.csv"),
    ):
        con.execute(
            "INSERT INTO tasks (task_ref, uuid, origin, source, category, project, fingerprint, "
            "raw, load_id) VALUES ($ref, $ref, $origin, 'jira', 'bug', $project, 'f', '{}', 0)",
            {"ref": ref, "project": project, "origin": origin},
        )
    found = seen_in(con, _registration(board_projects=("KAFKA", "o/r")), "p3")
    assert [(m.name, m.present, m.example) for m in found] == [
        ("KAFKA", 2, "KAFKA-1"),
        ("o/r", 1, "o/r#1"),
    ]


def _corpus(path: Path, records: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), "utf-8")
    return path


def _answers(prefix: str) -> list[dict[str, object]]:
    rows = [(0.9, True), (0.85, False), (0.95, True), (0.8, False)]
    return [
        {"question_id": f"{prefix}-q{i // 2}", "model": f"m{i % 2}", "confidence": c, "correct": k}
        for i, (c, k) in enumerate(rows)
    ]


def test_p1_marks_only_the_corpus_it_reads(con: duckdb.DuckDBPyConnection, tmp_path: Path) -> None:
    for corpus in ("seen", "fresh"):
        records = _answers(corpus)
        assert load_labels(con, _corpus(tmp_path / f"{corpus}.jsonl", records)).loaded == 4
    prereg = load_preregistration()
    markers = seen_label_markers_all(con, prereg, "seen")
    prereg = _registration(label_keys=markers[:1])
    assert run_p1(con, prereg, corpus="fresh").exploratory is False
    seen = run_p1(con, prereg, corpus="seen")
    assert seen.exploratory
    assert "label corpus 'seen'" in seen.preregistration["exploratory_reasons"][-1]
    # every corpus at once holds the seen one
    assert run_p1(con, prereg).exploratory


def seen_label_markers_all(
    con: duckdb.DuckDBPyConnection, prereg: Preregistration, corpus: str
) -> tuple[str, ...]:
    """Every record key's marker of ``corpus`` (the registration samples those starting 00)."""
    rows = con.execute(
        "SELECT DISTINCT sha256(array_to_string([groups ->> 'question_id', groups ->> 'model'], "
        "chr(31))) FROM labels WHERE corpus = $corpus ORDER BY 1",
        {"corpus": corpus},
    ).fetchall()
    assert label_key_columns(prereg.p1) == ("question_id", "model")
    return tuple(str(m) for (m,) in rows)


def test_seen_records_are_found_by_their_key_with_fields_added_or_dropped(
    tmp_path: Path,
) -> None:
    """The route of issue 31: the same records with two extra fields (or one dropped) were a
    pre-registered run on seen data, because the markers hashed whole records."""
    records = [{**r, "provider": "openai"} for r in _answers("hle")]
    original = connect(":memory:")
    load_labels(original, _corpus(tmp_path / "hle.jsonl", records))
    prereg = _registration(
        label_keys=seen_label_markers_all(original, load_preregistration(), "hle")
    )
    variants = {
        "extra": [{**r, "judge": "j", "raw": 90} for r in records],
        "dropped": [{k: v for k, v in r.items() if k != "provider"} for r in records],
        "reordered": [dict(reversed(list(r.items()))) for r in records],
    }
    for name, rows in variants.items():
        con = connect(":memory:")
        load_labels(con, _corpus(tmp_path / f"{name}.jsonl", rows))
        (match,) = seen_in(con, prereg, "p1")
        assert (match.name, match.present) == (name, 4), name
        assert run_p1(con, prereg, corpus=name).exploratory
    # another question (or another model) is another record
    con = connect(":memory:")
    other = [{**r, "question_id": f"other-{r['question_id']}"} for r in records]
    load_labels(con, _corpus(tmp_path / "other.jsonl", other))
    assert seen_in(con, prereg, "p1") == ()
    # a record without the key columns has no key: it is never "seen"
    con = connect(":memory:")
    bare = [{"confidence": r["confidence"], "correct": r["correct"]} for r in records]
    load_labels(con, _corpus(tmp_path / "bare.jsonl", bare))
    assert (
        seen_in(con, _registration(label_keys=(hashlib.sha256(b"\x1f").hexdigest(),)), "p1") == ()
    )


def test_the_old_whole_record_markers_are_refused_by_name(tmp_path: Path) -> None:
    toml = tmp_path / "preregistration.toml"
    text = (Path(__file__).resolve().parents[1] / "preregistration.toml").read_text("utf-8")
    toml.write_text(text.replace("label_keys = [", "label_record_keys = [", 1), "utf-8")
    with pytest.raises(InvalidPreregistration, match=r"\[seen\]: label_record_keys is a retired"):
        load_preregistration(toml)


def test_the_notebook_banner_shows_what_the_experiment_judged() -> None:
    prereg = load_preregistration()
    doc = {
        "exploratory": True,
        "preregistration": {"exploratory_reasons": ["the data include repository 'flask' (…)"]},
    }
    banner = notebook.banner(notebook.as_run(doc, prereg))
    assert banner.startswith("## ⚠ EXPLORATORY RUN")
    assert "repository 'flask'" in banner
    assert notebook.banner(notebook.as_run({"exploratory": False}, prereg)).startswith(
        "**Pre-registered run.**"
    )


def test_a_file_without_a_seen_table_names_no_data_and_a_bad_one_is_refused() -> None:
    prereg = load_preregistration()
    sections = {
        name: {f: getattr(getattr(prereg, name), f) for f in getattr(prereg, name).__dict__}
        for name in ("p1", "p2", "p3", "agent_vs_human")
    }
    data = {"version": 1, **_tomlish(sections)}
    assert parse_preregistration(data, source="x.toml", sha256="0").seen == SeenData()
    with pytest.raises(InvalidPreregistration, match="seen"):
        parse_preregistration({**data, "seen": {"git_commit": ["00"]}}, source="x.toml", sha256="0")


def _tomlish(value: object) -> object:
    """Parameters as TOML would give them (lists for tuples, tables for dataclasses)."""
    if isinstance(value, dict):
        return {k: _tomlish(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [_tomlish(v) for v in value]
    if isinstance(value, Rule):  # as results.json shows it, which the registration reads back
        return _tomlish(value.to_dict())
    if hasattr(value, "__dataclass_fields__"):
        return {k: _tomlish(v) for k, v in value.__dict__.items()}
    return value


@pytest.mark.shared
def test_the_registered_git_markers_are_what_the_registration_says(
    shared_dir: Path, tmp_path: Path
) -> None:
    """[seen] git_commits: each repository's root(s), the tip of main and every commit whose
    SHA starts with 00, no more and no less (the comment in preregistration.toml)."""
    expected: set[str] = set()
    for name in ("flask", "sqlite-utils"):
        clone = tmp_path / f"{name}.git"
        bundle = shared_dir / f"data/git/{name}.bundle"
        subprocess.run(["git", "clone", "-q", "--mirror", str(bundle), str(clone)], check=True)

        def git(*args: str, clone: Path = clone) -> list[str]:
            out = subprocess.run(
                ["git", "--git-dir", str(clone), *args], check=True, capture_output=True, text=True
            )
            return out.stdout.split()

        expected |= set(git("rev-list", "--all", "--max-parents=0"))
        expected |= {sha for sha in git("rev-list", "--all") if sha.startswith("00")}
        expected |= set(git("rev-parse", "refs/heads/main"))
    assert set(load_preregistration().seen.git_commits) == expected


@pytest.mark.shared
def test_the_registered_label_markers_are_what_the_registration_says(shared_dir: Path) -> None:
    """[seen] label_keys: the key markers starting 00 of the HLE corpus, no more, no less."""
    con = connect(":memory:")
    load_labels(con, shared_dir / "data/calibration/hle-verbalized-confidence.jsonl.gz")
    prereg = load_preregistration()
    markers = seen_label_markers(con, prereg.p1, "hle-verbalized-confidence")
    assert tuple(markers) == prereg.seen.label_keys and len(markers) == 18
