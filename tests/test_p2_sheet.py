"""``reflect p2 sheet`` / ``check-labels``: a stratified, seeded, blind sheet of P2's signals.

The repository is real git built here (features, their fixes a day later, a revert), loaded by
the real ``reflect load git --szz`` in a subprocess, as a user runs it; with ``../shared`` the
flask history too.
"""

from __future__ import annotations

import csv
import itertools
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from agent_reflection.experiments.p2.buckets import BUCKETS
from agent_reflection.experiments.p2.precision import InvalidLabels
from agent_reflection.experiments.p2.raters import GATE_COLUMNS, read_gate_labels
from agent_reflection.experiments.p2.sheet import (
    CRITERIA_SOURCES,
    SHEET_COLUMNS,
    SheetSignal,
    criteria_markdown,
    draw_sample,
    labelled_shas,
    read_criteria,
    section,
    truncate_diff,
)
from agent_reflection.experiments.registration import load_preregistration
from conftest import run_git

REPO_ROOT = Path(__file__).resolve().parents[1]
SECOND_RATER = REPO_ROOT / "tests" / "data" / "p2_second_rater"
T0 = datetime(2024, 3, 1, 12, tzinfo=UTC)
#: Words that would tell a rater P2's bucket or rule (the gate names also name the criteria's
#: gates, so they are looked for in the signals' sections only).
RULE_NAMES = tuple(
    rule.name for rule in load_preregistration(REPO_ROOT / "preregistration.toml").p2.rules
)


def signal(n: int, bucket: str, repo: str = "r") -> SheetSignal:
    return SheetSignal(repo, f"{n:040x}", "fix", f"fix {n}", f"{n + 1000:040x}", 3, 1.0, bucket)


def population(sizes: dict[str, int]) -> list[SheetSignal]:
    out: list[SheetSignal] = []
    for b, size in sizes.items():
        out += [signal(len(out) + i, b) for i in range(size)]
    return out


# --- the draw (pure) -------------------------------------------------------------------------


def test_the_draw_takes_per_bucket_signals_of_each_bucket_and_all_of_a_smaller_one() -> None:
    signals = population({"ci": 30, "human-review": 4, "only-self-reflection": 60})
    draw = draw_sample(signals, per_bucket=20, seed=1)
    assert dict(draw.drawn) == {"ci": 20, "human-review": 4, "only-self-reflection": 20}
    assert dict(draw.available) == {"ci": 30, "human-review": 4, "only-self-reflection": 60}
    assert Counter(s.bucket for s in draw.signals) == Counter(draw.drawn)
    assert len({s.fixing_sha for s in draw.signals}) == 44
    small = {s.fixing_sha for s in signals if s.bucket == "human-review"}
    assert small <= {s.fixing_sha for s in draw.signals}


def test_the_draw_is_determined_by_the_seed_not_by_the_input_order() -> None:
    signals = population({"ci": 30, "human-review": 10, "only-self-reflection": 60})
    one = draw_sample(signals, per_bucket=8, seed=42)
    again = draw_sample(list(reversed(signals)), per_bucket=8, seed=42)
    assert one == again
    other = draw_sample(signals, per_bucket=8, seed=43)
    assert {s.fixing_sha for s in other.signals} != {s.fixing_sha for s in one.signals}


def test_the_order_is_shuffled_across_buckets() -> None:
    draw = draw_sample(
        population({"ci": 10, "human-review": 10, "only-self-reflection": 10}),
        per_bucket=10,
        seed=7,
    )
    buckets = [s.bucket for s in draw.signals]
    runs = 1 + sum(1 for a, b in itertools.pairwise(buckets) if a != b)
    assert runs > 3  # grouped by bucket would be 3 runs
    assert buckets != sorted(buckets)


def test_labelled_and_other_repositories_are_not_drawn() -> None:
    signals = population({"ci": 5, "human-review": 5, "only-self-reflection": 5})
    signals.append(replace(signal(99, "ci"), repo="other"))
    labelled = [s.fixing_sha.upper() for s in signals[:3]]  # case does not matter
    draw = draw_sample(signals, per_bucket=5, seed=1, exclude=labelled, repo="r")
    drawn = {s.fixing_sha for s in draw.signals}
    assert not drawn & {s.fixing_sha for s in signals[:3]}
    assert draw.excluded == 3 and draw.drawn["ci"] == 2 and len(drawn) == 12
    assert all(s.repo == "r" for s in draw.signals)


def test_a_bucket_with_nothing_left_is_drawn_empty_and_said() -> None:
    from agent_reflection.experiments.p2.sheet import render_readme

    signals = population({"ci": 3, "only-self-reflection": 3})
    draw = draw_sample(signals, per_bucket=2, seed=1)
    assert draw.drawn == {"ci": 2, "human-review": 0, "only-self-reflection": 2}
    prereg = load_preregistration(REPO_ROOT / "preregistration.toml")
    text = render_readme(
        draw,
        db="x.duckdb",
        created="today",
        prereg=prereg,
        excluded_from=[],
        command="reflect p2 sheet",
    )
    assert "seed 1" in text and "human-review 0 of 0" in text
    assert "No signal was drawn for: human-review" in text


def test_a_long_diff_is_cut_whole_files_first_and_the_cut_is_named() -> None:
    def file(name: str, n: int) -> list[str]:
        return [f"diff --git a/{name} b/{name}", *(f"+line {i}" for i in range(n - 1))]

    diff = "\n".join(file("a.py", 30) + file("b.py", 100) + file("c.py", 5))
    text, notes = truncate_diff(diff, 60)
    assert len(text.splitlines()) == 60
    assert notes == ("b.py: diff cut after 30 of 100 lines", "c.py: diff of 5 lines not shown")
    assert truncate_diff(diff, 1000) == (diff, ())


def test_the_rendered_files_do_not_depend_on_the_bucket() -> None:
    """Blind by construction: the same signals with their buckets swapped give the same
    labels.csv and sheet.md."""
    from agent_reflection.experiments.p2.sheet import (
        CommitView,
        render_labels_csv,
        render_sheet,
    )

    draw = draw_sample(
        population({"ci": 3, "human-review": 3, "only-self-reflection": 3}), per_bucket=3, seed=2
    )
    view = CommitView("0" * 40, "commit x\n\n    Fix it", " a.py | 1 +", "+x", ("a.py",), ())
    views = {s.fixing_sha: (view, view) for s in draw.signals}
    swapped = replace(
        draw,
        signals=tuple(
            replace(s, bucket=BUCKETS[(BUCKETS.index(s.bucket) + 1) % 3]) for s in draw.signals
        ),
    )
    assert render_labels_csv(swapped) == render_labels_csv(draw)
    assert render_sheet(swapped, views, "criteria") == render_sheet(draw, views, "criteria")


# --- the columns and the criteria come from the second rater's folder ------------------------


def test_the_sheet_columns_are_the_second_raters_columns_in_order() -> None:
    # the shipped files predate the "could the author have known" column (issue 32)
    shipped = tuple(c for c in SHEET_COLUMNS if c != "knowable")
    for path in sorted(SECOND_RATER.glob("*.csv")):
        with path.open(newline="", encoding="utf-8") as handle:
            assert tuple(next(csv.reader(handle))) == shipped, path
    assert set(GATE_COLUMNS) <= set(SHEET_COLUMNS)


def test_the_criteria_are_read_from_the_label_readmes() -> None:
    criteria = read_criteria(REPO_ROOT)
    columns = section((SECOND_RATER / "README.md").read_text(encoding="utf-8"), "Columns")
    assert columns in criteria and "Gates (`gate_label`)" in criteria
    assert "`is_failure = yes` when the commit repairs behaviour" in criteria
    # the validation README's account of its own single rater is not a criterion
    assert "there is no second rater" not in criteria
    assert [name for name, _ in CRITERIA_SOURCES] == [
        "tests/data/p2_validation/README.md",
        "tests/data/p2_second_rater/README.md",
    ]
    with pytest.raises(ValueError, match=r"x\.md: no '## Columns' section"):
        criteria_markdown([("x.md", "Columns", "# nothing here\n")])


def test_the_registered_sample_keys_are_checked() -> None:
    from agent_reflection.experiments.registration import (
        InvalidPreregistration,
        apply_overrides,
    )

    prereg = load_preregistration(REPO_ROOT / "preregistration.toml")
    assert (prereg.p2.gate_sample_per_bucket, prereg.p2.gate_sample_seed) == (20, 20261123)
    for key, value in (("gate_sample_per_bucket", 1), ("gate_sample_seed", 0)):
        with pytest.raises(InvalidPreregistration, match=f"{key} must be >= {value}, got"):
            apply_overrides(prereg, {f"p2.{key}": value - 1})


def test_the_wheel_ships_the_criteria_beside_its_preregistration() -> None:
    import tomllib

    with (REPO_ROOT / "pyproject.toml").open("rb") as handle:
        wheel = tomllib.load(handle)["tool"]["hatch"]["build"]["targets"]["wheel"]
    shipped = wheel["force-include"]
    assert shipped["preregistration.toml"] == "agent_reflection/data/preregistration.toml"
    for name, _ in CRITERIA_SOURCES:
        assert shipped[name] == f"agent_reflection/data/{name}"


# --- a real repository, loaded and sheeted as a user does ------------------------------------


def reflect(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "REFLECT_LOCK_TIMEOUT": "60", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "agent_reflection", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )


def commit(repo: Path, when: datetime, message: str, files: dict[str, str]) -> str:
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
        run_git(repo, "add", name)
    stamp = when.isoformat()
    run_git(
        repo,
        "commit",
        "-q",
        "-m",
        message,
        env={"GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp},
    )
    return run_git(repo, "rev-parse", "HEAD").strip()


def code(name: str, value: str) -> str:
    return f"def {name}(x):\n    y = x + 1\n    return {value}\n"


def load_with_szz(db: Path, repo: Path) -> None:
    """What `reflect load git REPO --szz --db DB` does, in this process (the subprocess's
    start-up is the tests' main cost; the sheet commands run as subprocesses)."""
    from agent_reflection.load.git.history import load_git_history
    from agent_reflection.load.git.szz import load_fix_inducing
    from agent_reflection.store.db import connect

    with connect(db) as con:
        load_git_history(con, repo)
        load_fix_inducing(con, repo)


@pytest.fixture(scope="module")
def loaded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """A repository with two signals per bucket (a feature, its fix a day later) and a revert,
    loaded with SZZ; the P2 bucket each fixing sha should get."""
    root = tmp_path_factory.mktemp("p2sheet")
    repo = root / "shop"
    repo.mkdir()
    run_git(repo, "init", "-q", "-b", "main")
    expected: dict[str, str] = {}
    when = T0
    flavours = [
        # (feature path, fix subject, bucket)
        # a name git quotes (space, non-ASCII): the sheet still shows its diff
        ("src/shop/cart {k} café.py", "Fix cart total{k} for empty carts", "only-self-reflection"),
        ("src/shop/auth/login{k}.py", "Fix login{k} accepting a blank password", "human-review"),
        ("src/shop/fmt{k}.py", "Fix failing test of price format{k}", "ci"),
    ]
    for k in range(2):
        for path, fix, bucket in flavours:
            name = path.format(k=k)
            stem = Path(name).stem
            commit(repo, when, f"Add {stem}", {name: code(stem, "y")})
            when += timedelta(days=1)
            sha = commit(repo, when, fix.format(k=k), {name: code(stem, "y * 2")})
            expected[sha] = bucket
            when += timedelta(days=1)
    commit(repo, when, "Add gift wrapping", {"src/shop/gift.py": code("wrap", "y")})
    when += timedelta(hours=5)
    stamp = when.isoformat()
    run_git(
        repo,
        "revert",
        "--no-edit",
        "HEAD",
        env={"GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp},
    )
    revert = run_git(repo, "rev-parse", "HEAD").strip()
    db = root / "shop.duckdb"
    load_with_szz(db, repo)
    return {"root": root, "repo": repo, "db": db, "expected": expected, "revert": revert}


def read_rows(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        return list(reader.fieldnames or ()), list(reader)


def signal_sections(sheet: str) -> list[str]:
    """The per-signal sections of sheet.md (after the criteria)."""
    return sheet.split("\n---\n")[1:]


def mentions(text: str, word: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", text) is not None


def assert_blind(folder: Path, words: tuple[str, ...] = (*BUCKETS, *RULE_NAMES)) -> None:
    """No signal's section of sheet.md, and no row of labels.csv, names a P2 bucket or rule
    (``words``); the README (which counts the signals drawn per bucket) names no rule."""
    sheet = (folder / "sheet.md").read_text()
    for text in [*signal_sections(sheet), (folder / "labels.csv").read_text()]:
        for word in (*words, "needs_review"):
            assert not mentions(text, word), word
    readme = (folder / "README.md").read_text()
    assert not any(mentions(readme, rule) for rule in words if rule not in BUCKETS)


def test_the_sheet_of_a_real_repository(loaded: dict[str, object]) -> None:
    root, db = Path(str(loaded["root"])), str(loaded["db"])
    expected: dict[str, str] = loaded["expected"]  # type: ignore[assignment]
    revert = str(loaded["revert"])
    done = reflect(
        "p2", "sheet", "--db", db, "--out", "round1", "--per-bucket", "1", "--seed", "5", cwd=root
    )
    assert done.returncode == 0, done.stderr
    out = root / "round1"
    header, rows = read_rows(out / "labels.csv")
    assert tuple(header) == SHEET_COLUMNS
    # one per bucket; the revert's bucket competes with its bucket's fixes
    drawn = {r["fixing_sha"] for r in rows}
    assert len(rows) == 3
    buckets_drawn = Counter(expected.get(sha, "revert") for sha in drawn)
    assert buckets_drawn["ci"] == 1 and buckets_drawn["human-review"] == 1
    for row in rows:
        judged = ("is_failure", "category", "introducing_ok", "introducing_shas", "gate_label")
        assert all(row[c] == "" for c in (*judged, "rationale"))
        assert row["repo"] == "shop" and len(row["p2_introducing_sha"]) == 40
        assert row["kind"] == ("revert" if row["fixing_sha"] == revert else "fix")
    sheet = (out / "sheet.md").read_text()
    sections = signal_sections(sheet)
    # the sheet follows labels.csv's order, each section with real git output
    assert [re.search(r"fixing commit `([0-9a-f]{40})`", s)[1] for s in sections] == [  # type: ignore[index]
        r["fixing_sha"] for r in rows
    ]
    for s, row in zip(sections, rows, strict=True):
        assert f"commit {row['fixing_sha']}" in s and "AuthorDate:" in s
        assert "```diff\ndiff --git " in s and "+++ b/src/shop/" in s
        assert ("-    return y" if row["kind"] == "revert" else "+    return y * 2") in s
        assert f"`{row['p2_introducing_sha']}`" in s and "1 file changed" in s
    assert "Gates (`gate_label`)" in sheet.split("\n---\n")[0]
    assert_blind(out)
    readme = (out / "README.md").read_text()
    assert "seed 5" in readme and "1 counted signals per P2 bucket" in readme
    assert f"--db {db}" in readme

    # the same command draws the same sheet (--force: labels.csv is there)
    forced = reflect(
        "p2",
        "sheet",
        "--db",
        db,
        "--out",
        "round1",
        "--per-bucket",
        "1",
        "--seed",
        "5",
        "--force",
        cwd=root,
    )
    assert forced.returncode == 0 and read_rows(out / "labels.csv")[1] == rows
    assert (out / "sheet.md").read_text() == sheet


def test_a_second_round_skips_the_first_and_a_sheet_is_not_overwritten(
    loaded: dict[str, object],
) -> None:
    root, db = Path(str(loaded["root"])), str(loaded["db"])
    expected: dict[str, str] = loaded["expected"]  # type: ignore[assignment]
    first = reflect("p2", "sheet", "--db", db, "--out", "first", "--per-bucket", "1", cwd=root)
    assert first.returncode == 0, first.stderr
    drawn = {r["fixing_sha"] for r in read_rows(root / "first" / "labels.csv")[1]}
    again = reflect("p2", "sheet", "--db", db, "--out", "first", cwd=root)
    assert again.returncode == 1 and "first/labels.csv exists" in again.stderr
    second = reflect(
        "p2",
        "sheet",
        "--db",
        db,
        "--out",
        "round2",
        "--per-bucket",
        "5",
        "--exclude-labelled",
        "first/labels.csv",
        cwd=root,
    )
    assert second.returncode == 0, second.stderr
    later = {r["fixing_sha"] for r in read_rows(root / "round2" / "labels.csv")[1]}
    assert not later & drawn and later | drawn == {*expected, str(loaded["revert"])}
    assert "3 skipped as labelled" in second.stdout


def fill(rows: list[dict[str, str]], path: Path) -> None:
    gates = ["ci", "human-review", "only-self-reflection"]
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=SHEET_COLUMNS, lineterminator="\n")
        writer.writeheader()
        for i, row in enumerate(rows):
            failure = i != 0
            writer.writerow(
                {
                    **row,
                    "is_failure": "yes" if failure else "no",
                    "category": "functional-bug" if failure else "refactor",
                    "introducing_ok": "yes",
                    "introducing_shas": row["p2_introducing_sha"],
                    "gate_label": gates[i % 3] if failure else "",
                    "rationale": "read the diff",
                }
            )


def test_a_filled_sheet_passes_the_parser_and_a_bad_one_names_file_line_and_field(
    loaded: dict[str, object],
) -> None:
    root, db = Path(str(loaded["root"])), str(loaded["db"])
    done = reflect("p2", "sheet", "--db", db, "--out", "trip", "--per-bucket", "2", cwd=root)
    assert done.returncode == 0, done.stderr
    labels = root / "trip" / "labels.csv"
    rows = read_rows(labels)[1]
    # unfilled, it is refused at its first row
    blank = reflect("p2", "check-labels", str(labels), cwd=root)
    assert blank.returncode == 1
    assert f"{labels}, line 2: is_failure must be yes or no, got ''" in blank.stderr
    fill(rows, labels)
    ok = reflect("p2", "check-labels", "trip", cwd=root)
    assert ok.returncode == 0, ok.stderr
    parsed = read_gate_labels([labels])
    assert [g.fixing_sha for g in parsed] == [r["fixing_sha"] for r in rows]
    failures = len(rows) - 1
    assert f"{len(rows)} signal(s) labelled, {failures} failure(s)" in ok.stdout
    assert [g.gate for g in parsed][:4] == [None, "human-review", "only-self-reflection", "ci"]

    def broken(line: int, column: str, value: str) -> str:
        bad = [dict(r) for r in read_rows(labels)[1]]
        bad[line - 2][column] = value
        path = root / "trip" / f"bad-{column}.csv"
        with path.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, fieldnames=SHEET_COLUMNS, lineterminator="\n")
            writer.writeheader()
            writer.writerows(bad)
        with pytest.raises(InvalidLabels) as refused:
            read_gate_labels([path])  # what `reflect p2 check-labels` calls
        return str(refused.value)

    assert "bad-gate_label.csv, line 3: gate_label must be one of" in broken(3, "gate_label", "qa")
    assert "line 2: gate_label must be empty when is_failure = no" in broken(2, "gate_label", "ci")
    assert "line 4: gate_label is empty for a failure" in broken(4, "gate_label", "")
    assert "line 3: introducing_ok must be one of" in broken(3, "introducing_ok", "maybe")
    assert "line 3: category must be one of" in broken(3, "category", "bug")
    assert "line 3: category 'cosmetic' means is_failure = no, got yes" in broken(
        3, "category", "cosmetic"
    )
    twice = broken(3, "fixing_sha", rows[0]["fixing_sha"])
    assert f"line 3: fixing_sha {rows[0]['fixing_sha']} is labelled twice" in twice
    assert "bad-fixing_sha.csv, line 2); keep one row" in twice


@pytest.mark.slow
def test_a_new_round_skips_the_registered_gate_labels_unless_asked(
    loaded: dict[str, object],
) -> None:
    # its own folder: the module's other tests share the loaded repository and its root
    root, db = Path(str(loaded["root"])), str(loaded["db"])
    team = root / "registered" / "team"
    first = reflect("p2", "sheet", "--db", db, "--out", str(team), "--per-bucket", "1", cwd=root)
    assert first.returncode == 0, first.stderr
    fill(read_rows(team / "labels.csv")[1], team / "labels.csv")
    drawn = {r["fixing_sha"] for r in read_rows(team / "labels.csv")[1]}
    # the team registers its labels: [p2] gate_labels_paths of its own pre-registration,
    # relative to that file's folder
    text = (REPO_ROOT / "preregistration.toml").read_text()
    assert "\ngate_labels_paths = []\n" in text
    prereg = root / "registered" / "preregistration.toml"
    prereg.write_text(
        text.replace("\ngate_labels_paths = []\n", '\ngate_labels_paths = ["team"]\n')
    )
    common = ("p2", "sheet", "--db", db, "--per-bucket", "5", "--prereg", str(prereg))
    out, out_all = root / "registered" / "round2", root / "registered" / "round2-all"
    second = reflect(*common, "--out", str(out), cwd=root)
    assert second.returncode == 0, second.stderr
    assert "3 skipped as labelled" in second.stdout
    later = {r["fixing_sha"] for r in read_rows(out / "labels.csv")[1]}
    assert later and not later & drawn
    assert "team/labels.csv" in (out / "README.md").read_text()
    again = reflect(*common, "--out", str(out_all), "--include-registered", cwd=root)
    assert again.returncode == 0, again.stderr
    assert "0 skipped as labelled" in again.stdout
    every = {r["fixing_sha"] for r in read_rows(out_all / "labels.csv")[1]}
    assert drawn <= every


def test_a_repository_that_is_gone_is_named_and_can_be_given(
    loaded: dict[str, object], tmp_path: Path
) -> None:
    from agent_reflection.experiments.p2.sheet import SheetError, make_sheet

    clone = tmp_path / "shop"
    subprocess.run(["git", "clone", "-q", str(loaded["repo"]), str(clone)], check=True)
    db = str(tmp_path / "clone.duckdb")
    load_with_szz(Path(db), clone)
    shutil.rmtree(clone)
    with pytest.raises(SheetError) as gone:
        make_sheet(
            Path(db),
            tmp_path / "x",
            per_bucket=5,
            seed=1,
            include_registered=True,
            preregistration_path=REPO_ROOT / "preregistration.toml",
        )
    assert str(gone.value) == (
        f"repository 'shop': it was loaded from {clone}, which is not there any more; "
        "pass --repo-path shop=PATH (a clone or bundle of it)"
    )
    given = reflect(
        "p2",
        "sheet",
        "--db",
        db,
        "--out",
        "x",
        "--repo-path",
        f"shop={loaded['repo']}",
        cwd=tmp_path,
    )
    assert given.returncode == 0, given.stderr
    sections = signal_sections((tmp_path / "x" / "sheet.md").read_text())
    assert len(sections) == 7 and all(s.count("```diff\n") == 2 for s in sections)
    assert "Diff of its code files (src/shop/cart 1 café.py)" in "".join(sections)


def test_a_repo_path_without_a_name_is_refused(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from agent_reflection.cli import cli

    db = tmp_path / "empty.duckdb"
    db.touch()
    args = ["p2", "sheet", "--db", str(db), "--out", str(tmp_path), "--repo-path", "shop"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2 and "'shop': expected NAME=PATH" in result.output


def test_excluded_label_files_are_read_by_their_fixing_sha(tmp_path: Path) -> None:
    shas = labelled_shas([SECOND_RATER])
    assert len(shas) == 92
    bad = tmp_path / "bad.csv"
    bad.write_text("repo,fixing_sha\nr,abc\n")
    with pytest.raises(InvalidLabels, match=r"bad.csv, line 2: fixing_sha must be 40 hex"):
        labelled_shas([bad])
    (tmp_path / "none.csv").write_text("repo,sha\n")
    with pytest.raises(InvalidLabels, match=r"none\.csv: missing column\(s\) \['fixing_sha'\]"):
        labelled_shas([tmp_path / "none.csv"])


# --- flask ------------------------------------------------------------------------------------

#: flask's counted signals the second rater did not rate: counted after the rating (37217e85 by
#: the fix-wording amendment, the others as fixes of fixes, issue 32)
FLASK_COUNTED_AFTER_RATING = (
    "37217e85b80c389208cd3396c2cdc4b89bd46bcf",
    "3c821a0fa45082bcec73dfb08662fb1de5263c48",
    "e432d833b5f7b4c27e2dca5d5125bbf78a46327d",
    "9983e847425621b5e474ae9da6822f1af0b0cc1f",
    "3e4dbf93d9ef2b64d32b291aa6f7620bdbc6576a",
    "6de9484c97a9965ba2373015d28ab79280b85abe",
    "d094d5b6fc86a26680a8c496f719c4d711fcd766",
    "6ef45f30ab0e95d80ee2a29168f098e9037b9e0b",
    "99afbb277d25d3b052e00b9a8da216054d51d62a",
    "3257b7574e7f010686a617197e0fb4596986f7f7",
)


@pytest.mark.shared
@pytest.mark.slow(reason="flask loaded with SZZ through the CLI, then its sheet")
def test_the_sheet_of_flask(shared_dir: Path, tmp_path: Path) -> None:
    bundle = shared_dir / "data" / "git" / "flask.bundle"
    db = tmp_path / "flask.duckdb"
    cache = {"REFLECT_CACHE_DIR": str(tmp_path / "cache")}
    done = reflect("load", "git", str(bundle), "--szz", "--db", str(db), cwd=tmp_path, env=cache)
    assert done.returncode == 0, done.stderr
    sheet = reflect("p2", "sheet", "--db", str(db), "--out", "flask", cwd=tmp_path, env=cache)
    assert sheet.returncode == 0, sheet.stderr
    # P2's counted flask signals: 22 ci, 2 human-review, 43 only-self-reflection (19, 2 and 37
    # before issue 32 counted fixes of fixes and took docs / manifests off the review surface)
    assert "ci 20 of 22, human-review 2 of 2, only-self-reflection 20 of 43" in sheet.stdout
    out = tmp_path / "flask"
    rows = read_rows(out / "labels.csv")[1]
    assert len(rows) == 42 and {r["repo"] for r in rows} == {"flask"}
    text = (out / "sheet.md").read_text()
    assert len(signal_sections(text)) == 42
    # flask's own words include "otherwise" and "ci": the names no commit uses are looked for
    assert_blind(out, tuple(w for w in (*BUCKETS, *RULE_NAMES) if "-" in w))
    # every drawn signal but the new ones is one the second rater labelled: their known columns
    # agree; 37217e85 is counted since the fix-wording amendment of 2026-11-29, the fixes of
    # fixes since issue 32, both after the rating
    new = set(FLASK_COUNTED_AFTER_RATING)
    second = {}
    for path in SECOND_RATER.glob("*.csv"):
        second.update({r["fixing_sha"]: r for r in read_rows(path)[1]})
    for row in (r for r in rows if r["fixing_sha"] not in new):
        known = ("repo", "fixing_sha", "kind", "subject", "p2_introducing_sha")
        assert {c: row[c] for c in known} == {c: second[row["fixing_sha"]][c] for c in known}
    # all of flask's counted signals but those are labelled there: only they are left to draw
    rest = reflect(
        "p2",
        "sheet",
        "--db",
        str(db),
        "--out",
        "rest",
        "--exclude-labelled",
        str(SECOND_RATER),
        cwd=tmp_path,
    )
    assert rest.returncode == 0, rest.stderr
    assert {r["fixing_sha"] for r in read_rows(tmp_path / "rest" / "labels.csv")[1]} == new
