"""The hand-labelled P2 validation set (tests/data/p2_validation/): structure, allowed values,
and, when ../shared/ is present, that every commit exists in the bundle it was judged from and
that the candidate rule in the README reproduces exactly the labelled commits."""

from __future__ import annotations

import csv
import importlib.util
import re
import subprocess
from pathlib import Path
from types import ModuleType

import pytest

from agent_reflection.load.git.signals import SIGNALS_VERSION, derive_signals

DATA_DIR = Path(__file__).parent / "data" / "p2_validation"
COLUMNS = [
    "repo",
    "fixing_sha",
    "kind",
    "subject",
    "is_failure",
    "category",
    "introducing_shas",
    "introducing_is_feature",
    "rationale",
]
KINDS = {"revert", "fix"}
YES_NO = {"yes", "no"}
CATEGORIES = {
    "functional-bug",
    "regression",
    "revert-of-failure",
    "cancelled-revert",
    "cosmetic",
    "lint-or-ci",
    "docs",
    "refactor",
    "feature",
    "not-a-fix",
    "other",
}
#: Categories that are failures by definition, and those that never are (README, "Judging").
FAILURE_CATEGORIES = {"functional-bug", "regression", "revert-of-failure"}
NON_FAILURE_CATEGORIES = {
    "cancelled-revert",
    "cosmetic",
    "docs",
    "refactor",
    "feature",
    "not-a-fix",
}
FULL_SHA = re.compile(r"[0-9a-f]{40}")
#: File stem -> (bundle under ../shared/data/git/, number of seeded fix-like commits, seed).
SOURCES = {
    "flask": ("flask.bundle", 120, 20261123),
    "sqlite-utils": ("sqlite-utils.bundle", 40, 20261123),
}


def read_rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        assert reader.fieldnames == COLUMNS, f"{path.name}: header {reader.fieldnames}"
        return list(reader)


def all_files() -> list[Path]:
    return sorted(DATA_DIR.glob("*.csv"))


def test_files_are_the_documented_ones() -> None:
    assert [path.stem for path in all_files()] == sorted(SOURCES)
    assert (DATA_DIR / "README.md").is_file()


def test_at_least_100_signals_in_total() -> None:
    assert sum(len(read_rows(path)) for path in all_files()) >= 100


@pytest.mark.parametrize("path", all_files(), ids=lambda path: path.name)
def test_rows_use_allowed_values(path: Path) -> None:
    rows = read_rows(path)
    shas = [row["fixing_sha"] for row in rows]
    assert len(shas) == len(set(shas)), f"{path.name}: duplicate fixing_sha"
    for line, row in enumerate(rows, start=2):
        where = f"{path.name} line {line}"
        assert row["repo"] == path.stem, where
        assert FULL_SHA.fullmatch(row["fixing_sha"]), f"{where}: fixing_sha"
        assert row["kind"] in KINDS, f"{where}: kind"
        assert row["subject"].strip(), f"{where}: subject"
        assert row["is_failure"] in YES_NO, f"{where}: is_failure"
        assert row["category"] in CATEGORIES, f"{where}: category"
        assert row["introducing_is_feature"] in YES_NO | {"unknown"}, where
        rationale = row["rationale"]
        assert rationale.strip() and "\n" not in rationale, f"{where}: rationale"
        introducing = row["introducing_shas"].split(" ") if row["introducing_shas"] else []
        assert all(FULL_SHA.fullmatch(sha) for sha in introducing), f"{where}: introducing"
        assert row["fixing_sha"] not in introducing, where


@pytest.mark.parametrize("path", all_files(), ids=lambda path: path.name)
def test_labels_are_consistent(path: Path) -> None:
    for line, row in enumerate(read_rows(path), start=2):
        where = f"{path.name} line {line} ({row['fixing_sha'][:8]})"
        if row["category"] in FAILURE_CATEGORIES:
            assert row["is_failure"] == "yes", where
        if row["category"] in NON_FAILURE_CATEGORIES:
            assert row["is_failure"] == "no", where
        if row["category"] in {"revert-of-failure", "cancelled-revert"}:
            assert row["kind"] == "revert", where
        if row["kind"] == "revert":
            # A revert is attributed to the commit it reverts.
            assert row["introducing_shas"], where
        if not row["introducing_shas"]:
            assert row["introducing_is_feature"] == "unknown", where


def load_selector() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "p2_select_candidates", DATA_DIR / "select_candidates.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def git(clone: Path, *args: str, stdin: str | None = None) -> str:
    return subprocess.run(
        ["git", *args], cwd=clone, input=stdin, check=True, capture_output=True, text=True
    ).stdout


@pytest.fixture(scope="module", params=sorted(SOURCES))
def labelled_clone(
    request: pytest.FixtureRequest, shared_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[str, Path]:
    stem = request.param
    bundle = shared_dir / "data" / "git" / SOURCES[stem][0]
    if not bundle.is_file():
        pytest.skip(f"{bundle} not present in ../shared/")
    clone = tmp_path_factory.mktemp(f"p2-{stem}") / stem
    subprocess.run(["git", "clone", "-q", str(bundle), str(clone)], check=True, capture_output=True)
    return stem, clone


def test_every_sha_is_in_the_bundle_and_each_introducer_precedes_its_fix(
    labelled_clone: tuple[str, Path],
) -> None:
    stem, clone = labelled_clone
    rows = read_rows(DATA_DIR / f"{stem}.csv")
    for row in rows:
        fixing = row["fixing_sha"]
        assert git(clone, "cat-file", "-t", fixing).strip() == "commit", fixing
        assert git(clone, "log", "-1", "--format=%s", fixing).rstrip("\n") == row["subject"]
        for introducing in row["introducing_shas"].split():
            ancestor = subprocess.run(
                ["git", "merge-base", "--is-ancestor", introducing, fixing], cwd=clone
            )
            assert ancestor.returncode == 0, f"{stem} {fixing}: {introducing} is not an ancestor"


def test_kind_matches_the_production_signal_rule(labelled_clone: tuple[str, Path]) -> None:
    stem, clone = labelled_clone
    for row in read_rows(DATA_DIR / f"{stem}.csv"):
        sha = row["fixing_sha"]
        subject, body = git(clone, "log", "-1", "--format=%s%x00%b", sha).split("\x00", 1)
        signals = derive_signals(subject, body)
        if row["kind"] == "revert":
            assert signals.is_revert, sha
        else:
            parents = git(clone, "log", "-1", "--format=%P", sha).split()
            assert signals.is_fix_like and not signals.is_revert and len(parents) == 1, sha


def test_readme_rule_reproduces_the_labelled_commits(labelled_clone: tuple[str, Path]) -> None:
    if SIGNALS_VERSION != 1:
        pytest.skip(f"the set was sampled with signal rules v1; they are now v{SIGNALS_VERSION}")
    stem, clone = labelled_clone
    _, n_fixes, seed = SOURCES[stem]
    reverts, sample = load_selector().select(clone, n_fixes, seed)
    expected = [sha for sha, _ in reverts] + [sha for sha, _ in sample]
    assert [row["fixing_sha"] for row in read_rows(DATA_DIR / f"{stem}.csv")] == expected
