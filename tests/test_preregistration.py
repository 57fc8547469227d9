"""The pre-registration file: defaults of the issue, validation errors, hash, overrides."""

from __future__ import annotations

import hashlib
import tomllib
from pathlib import Path

import pytest

from agent_reflection.experiments.registration import (
    InvalidPreregistration,
    apply_overrides,
    load_preregistration,
)

ROOT = Path(__file__).resolve().parents[1]
FILE = ROOT / "preregistration.toml"


def test_committed_file_holds_the_issue_defaults() -> None:
    p = load_preregistration(FILE)
    assert p.sha256 == hashlib.sha256(FILE.read_bytes()).hexdigest()
    assert (p.p1.high_confidence_threshold, p.p1.confidence_level) == (0.8, 0.95)
    assert (p.p1.smallest_useful_auc, p.p1.power) == (0.55, 0.8)
    assert p.p1.bootstrap_method == "percentile" and p.p1.ci_method == "cluster_bootstrap"
    assert (p.p1.strata_column, p.p1.cluster_column) == ("model", "question_id")
    assert (p.p1.loop_strata_column, p.p1.loop_cluster_column) == ("agent", "task_ref")
    assert (p.p2.window_days, p.p2.smallest_useful_share, p.p2.min_signals) == (7, 0.10, 20)
    buckets = [r.bucket for r in p.p2.rules]
    assert buckets == ["ci", "ci", "ci", "human-review", "human-review", "only-self-reflection"]
    # review events first where they exist (issue 32), the risk floor's path rule as fallback
    assert p.p2.rules[-3].conditions == {"failing_reviewed_max_lines": 400}
    assert p.p2.rules[-2].conditions == {"failing_risk_needs_review": True}
    p3 = p.p3
    assert (p3.window_days, p3.min_follow_up_days, p3.smallest_useful_fraction) == (30, 30, 0.2)
    assert p.exploratory is False and p.overrides == {}


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "prereg.toml"
    path.write_text(text)
    return path


def edited(old: str, new: str) -> str:
    text = FILE.read_text()
    assert old in text
    return text.replace(old, new, 1)


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (
            "high_confidence_threshold = 0.8",
            "high_confidence_threshold = 1.8",
            r"\[p1\]: high_confidence_threshold must be in \[0, 1\]",
        ),
        (
            "bootstrap_resamples = 2000",
            "bootstrap_resamples = 'many'",
            "bootstrap_resamples must be an integer",
        ),
        ("smallest_useful_auc = 0.55", "smallest_useful_auc = 0.5", "smallest_useful_auc must be"),
        ("window_days = 7", "window_dayz = 7", r"unknown key\(s\) \['window_dayz'\]"),
        ('label_source = "corpus"', 'label_source = "vibes"', "label_source must be"),
        ('bucket = "human-review"', 'bucket = "manager"', "bucket must be one of"),
        ("version = 1", "version = 2", "version must be 1"),
        ('as_of = "data"', 'as_of = "yesterday"', "as_of must be 'data' or an ISO-8601"),
        ('name = "otherwise"', 'name = "otherwise"\nfixing_paths_all = ["x"]', "catch-all"),
        ("kind = '^regression$'", "kind = '('", "not a valid regex"),
        (
            'fix_wording = "verb"',
            'fix_wording = "noun"',
            r"\[p2\]: fix_wording must be one of \['word', 'verb'\]",
        ),
    ],
)
def test_invalid_values_name_file_section_and_key(tmp_path, old, new, message):  # type: ignore[no-untyped-def]
    path = write(tmp_path, edited(old, new))
    with pytest.raises(InvalidPreregistration, match=message) as exc:
        load_preregistration(path)
    assert str(path) in str(exc.value)


def test_missing_and_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(InvalidPreregistration, match="cannot read"):
        load_preregistration(tmp_path / "nope.toml")
    with pytest.raises(InvalidPreregistration, match="not valid TOML"):
        load_preregistration(write(tmp_path, "p1 = [unclosed"))
    text = FILE.read_text()
    cut = text[: text.index("[p3]")]
    with pytest.raises(InvalidPreregistration, match=r"missing table \[p3\]"):
        load_preregistration(write(tmp_path, cut))


def test_overrides_mark_exploratory_only_when_they_change_something() -> None:
    p = load_preregistration(FILE)
    same = apply_overrides(p, {"p2.window_days": 7})
    assert same.exploratory is False and same.overrides == {"p2.window_days": 7}
    changed = apply_overrides(p, {"p2.window_days": 14, "p1.ece_bins": [0, 0.5, 1]})
    assert changed.exploratory is True
    assert changed.p2.window_days == 14 and changed.p1.ece_bins == (0.0, 0.5, 1.0)
    assert changed.sha256 == p.sha256
    assert changed.provenance()["overrides"]["p1.ece_bins"] == [0.0, 0.5, 1.0]


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("p9.x", 1, "section.key"),
        ("p1.nope", 1, "has no key 'nope'"),
        ("p1.bootstrap_resamples", 1.5, "must be an integer"),
        ("window_days", 3, "section.key"),
    ],
)
def test_bad_overrides(key, value, message) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InvalidPreregistration, match=message):
        apply_overrides(load_preregistration(FILE), {key: value})


def test_env_var_selects_the_file(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    path = write(tmp_path, edited("seed = 20250922", "seed = 1"))
    monkeypatch.setenv("REFLECT_PREREGISTRATION", str(path))
    p = load_preregistration()
    assert p.p1.seed == 1 and p.path == str(path)
    assert tomllib.loads(path.read_text())["p1"]["seed"] == 1


def test_a_different_file_makes_the_run_exploratory(tmp_path: Path) -> None:
    from agent_reflection.experiments.registration import load_for_run

    assert load_for_run(None, {}).exploratory is False  # the committed file matches its lock
    copy = write(tmp_path, FILE.read_text())
    assert load_for_run(copy, {}).exploratory is False  # same content: same pre-registration
    other = load_for_run(write(tmp_path, edited("seed = 20250922", "seed = 1")), {})
    assert other.exploratory is True
    assert "is not the registered pre-registration" in other.provenance()["exploratory_reasons"][0]
