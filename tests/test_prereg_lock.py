"""The frozen pre-registration: the lock, every route to a changed file, freeze and status.

Library tests use real files in tmp_path with an explicit registered file. CLI tests run the
real ``reflect`` in a subprocess on a copy of the checkout (package, TOML, lock, notebooks),
so the registered file itself can be edited, unlocked or amended.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import tomllib
from datetime import UTC, datetime
from pathlib import Path

import pytest

from agent_reflection.experiments.analysis_code import registered_code
from agent_reflection.experiments.registration import (
    LOCK_NAME,
    ROUTE_ENV,
    ROUTE_FLAG,
    ROUTE_REGISTERED,
    ROUTE_WORKING_FOLDER,
    Entry,
    FreezeRefused,
    InvalidLock,
    Lock,
    amended_after_loads,
    freeze,
    load_for_run,
    load_preregistration,
    lock_path_for,
    parameter_differences,
    params_dict,
    parse_lock,
    resolve_preregistration,
)
from agent_reflection.experiments.results import read_results

ROOT = Path(__file__).resolve().parents[1]
TOML = ROOT / "preregistration.toml"
SEED = "seed = 20250922"
T0 = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def edit(path: Path, old: str = SEED, new: str = "seed = 1") -> Path:
    text = path.read_text("utf-8")
    assert old in text
    path.write_text(text.replace(old, new), "utf-8")
    return path


def freeze_file(toml: Path, reason: str = "first registration", now: datetime = T0) -> str:
    prereg = load_preregistration(toml)
    return freeze(
        lock_path_for(toml), file_name=toml.name, sha256=prereg.sha256, reason=reason, now=now
    ).action


@pytest.fixture
def registered(tmp_path: Path) -> Path:
    """A registered file (a copy of the repository's) with its lock frozen."""
    folder = tmp_path / "registered"
    folder.mkdir()
    toml = folder / "preregistration.toml"
    shutil.copyfile(TOML, toml)
    assert freeze_file(toml) == "frozen"
    return toml


@pytest.fixture
def elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run from an empty working folder with no $REFLECT_PREREGISTRATION."""
    folder = tmp_path / "work"
    folder.mkdir()
    monkeypatch.chdir(folder)
    monkeypatch.delenv("REFLECT_PREREGISTRATION", raising=False)
    return folder


# --- every route, one by one ---------------------------------------------------------------


def test_registered_file_matching_its_lock_is_pre_registered(registered, elsewhere) -> None:  # type: ignore[no-untyped-def]
    p = load_for_run(None, {}, registered=registered)
    assert not p.exploratory and p.reasons == ()
    assert p.registration is not None and p.registration.matches
    doc = p.provenance()
    assert doc["exploratory"] is False and doc["exploratory_reasons"] == []
    reg = doc["registration"]
    assert (
        reg["frozen_at"] == "2026-01-02T03:04:05Z" and reg["frozen_reason"] == "first registration"
    )
    assert reg["registered_sha256"] == p.sha256 and reg["amendments"] == []


def test_in_place_edit_is_exploratory(registered, elsewhere) -> None:  # type: ignore[no-untyped-def]
    p = load_for_run(registered, {}, registered=edit(registered))
    assert p.exploratory
    (reason,) = p.reasons
    assert "was edited after it was registered" in reason and "2026-01-02T03:04:05Z" in reason


def test_missing_lock_is_exploratory(registered, elsewhere) -> None:  # type: ignore[no-untyped-def]
    lock_path_for(registered).unlink()
    p = load_for_run(registered, {}, registered=registered)
    assert p.exploratory
    (reason,) = p.reasons
    assert f"no {LOCK_NAME}" in reason and "reflect prereg freeze" in reason


def test_invalid_lock_is_exploratory(registered, elsewhere) -> None:  # type: ignore[no-untyped-def]
    lock = lock_path_for(registered)
    lock.write_text(lock.read_text().replace('at = "2026', 'at = "yesterday'), "utf-8")
    p = load_for_run(registered, {}, registered=registered)
    assert p.exploratory and "lock is invalid" in p.reasons[0] and "[frozen]" in p.reasons[0]


def test_env_var_file(registered, elsewhere, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    other = tmp_path / "edited.toml"
    shutil.copyfile(registered, other)
    monkeypatch.setenv("REFLECT_PREREGISTRATION", str(other))
    same = load_for_run(None, {}, registered=registered)
    assert not same.exploratory and same.registration.route == ROUTE_ENV  # type: ignore[union-attr]
    edit(other)
    p = load_for_run(None, {}, registered=registered)
    assert p.exploratory and p.p1.seed == 1 and p.path == str(other)
    assert p.registration is not None and p.registration.route == ROUTE_ENV
    assert "is not the registered pre-registration" in p.reasons[0]


def test_flag_file(registered, elsewhere, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("REFLECT_PREREGISTRATION", str(registered))  # the flag wins over it
    copy = tmp_path / "copy.toml"
    shutil.copyfile(registered, copy)
    same = load_for_run(copy, {}, registered=registered)
    assert not same.exploratory  # byte-identical: it *is* the registered pre-registration
    p = load_for_run(edit(copy), {}, registered=registered)
    assert p.exploratory and p.registration is not None and p.registration.route == ROUTE_FLAG


def test_working_folder_file(registered, elsewhere) -> None:  # type: ignore[no-untyped-def]
    local = elsewhere / "preregistration.toml"
    shutil.copyfile(registered, local)
    assert resolve_preregistration(None) == (local.resolve(), ROUTE_WORKING_FOLDER)
    assert not load_for_run(None, {}, registered=registered).exploratory
    edit(local)
    p = load_for_run(None, {}, registered=registered)
    assert p.exploratory and p.p1.seed == 1
    assert p.registration is not None and p.registration.route == ROUTE_WORKING_FOLDER
    assert str(local.resolve()) in p.reasons[0]


def test_precedence_flag_env_working_folder_registered(elsewhere, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    assert resolve_preregistration(None) == (TOML, ROUTE_REGISTERED)
    (elsewhere / "preregistration.toml").write_text("x")
    assert resolve_preregistration(None)[1] == ROUTE_WORKING_FOLDER
    monkeypatch.setenv("REFLECT_PREREGISTRATION", str(tmp_path / "env.toml"))
    assert resolve_preregistration(None) == ((tmp_path / "env.toml").resolve(), ROUTE_ENV)
    assert resolve_preregistration(tmp_path / "f.toml") == ((tmp_path / "f.toml"), ROUTE_FLAG)


def test_override_is_exploratory_even_with_a_matching_lock(registered, elsewhere) -> None:  # type: ignore[no-untyped-def]
    same = load_for_run(None, {"p2.window_days": 7}, registered=registered)
    assert not same.exploratory and same.reasons == ()
    p = load_for_run(None, {"p2.window_days": 14}, registered=registered)
    assert p.exploratory and p.registration is not None and p.registration.matches
    assert p.reasons == ("override p2.window_days = 14 differs from the file's 7",)


def test_amendment_registers_the_new_file(registered, elsewhere) -> None:  # type: ignore[no-untyped-def]
    old = registered.read_bytes()
    edit(registered)
    later = datetime(2026, 2, 1, tzinfo=UTC)
    assert freeze_file(registered, "seed changed in review", later) == "amended"
    p = load_for_run(None, {}, registered=registered)
    assert not p.exploratory and p.p1.seed == 1
    (amendment,) = p.provenance()["registration"]["amendments"]
    assert amendment["at"] == "2026-02-01T00:00:00Z"
    assert amendment["reason"] == "seed changed in review"
    registered.write_bytes(old)  # the superseded version is no longer the registered one
    assert load_for_run(None, {}, registered=registered).exploratory


# --- the lock file ------------------------------------------------------------------------


def test_freeze_writes_then_appends_and_never_rewrites(tmp_path: Path) -> None:
    toml = tmp_path / "preregistration.toml"
    shutil.copyfile(TOML, toml)
    lock = lock_path_for(toml)
    assert freeze_file(toml, "first") == "frozen"
    first = lock.read_bytes()
    assert freeze_file(toml, "again", datetime(2026, 3, 1, tzinfo=UTC)) == "unchanged"
    assert lock.read_bytes() == first
    edit(toml)
    assert (
        freeze_file(toml, 'second: "quoted"\nline', datetime(2026, 3, 1, tzinfo=UTC)) == "amended"
    )
    second = lock.read_bytes()
    assert second.startswith(first)  # append-only
    edit(toml, "seed = 1", "seed = 2")
    assert freeze_file(toml, "third", datetime(2026, 4, 1, tzinfo=UTC)) == "amended"
    assert lock.read_bytes().startswith(second)
    parsed = parse_lock(lock.read_text("utf-8"), source="lock")
    assert [a.reason for a in parsed.amendments] == ['second: "quoted"\nline', "third"]
    assert parsed.amendments[1].previous_sha256 == parsed.amendments[0].sha256
    assert parsed.amendments[0].previous_sha256 == parsed.frozen.sha256
    assert parsed.registered_sha256 == load_preregistration(toml).sha256
    raw = tomllib.loads(lock.read_text())
    assert set(raw) == {"version", "file", "frozen", "amendments"} and raw["file"] == toml.name


def test_freeze_refuses_without_a_reason(tmp_path: Path) -> None:
    toml = tmp_path / "preregistration.toml"
    shutil.copyfile(TOML, toml)
    with pytest.raises(FreezeRefused, match="needs a reason"):
        freeze_file(toml, "   ")
    assert not lock_path_for(toml).exists()


def test_a_lock_with_an_edited_history_is_rejected(tmp_path: Path) -> None:
    toml = tmp_path / "preregistration.toml"
    shutil.copyfile(TOML, toml)
    freeze_file(toml)
    freeze_file(edit(toml), "amend", datetime(2026, 3, 1, tzinfo=UTC))
    lock = lock_path_for(toml)
    original = parse_lock(lock.read_text("utf-8"), source="lock").frozen.sha256
    lock.write_text(lock.read_text().replace(original, "0" * 64, 1), "utf-8")
    # the edited entry's own hash names it (the amendment's previous_sha256 no longer follows)
    with pytest.raises(InvalidLock, match=r"\[frozen\]: entry_sha256 .* edited by hand"):
        parse_lock(lock.read_text("utf-8"), source="lock")
    with pytest.raises(InvalidLock):  # freeze never appends to a broken history
        freeze_file(edit(toml, "seed = 1", "seed = 3"), "more", datetime(2026, 4, 1, tzinfo=UTC))


def test_the_shipped_lock_registers_the_committed_file() -> None:
    lock = parse_lock((ROOT / LOCK_NAME).read_text("utf-8"), source="lock")
    assert lock.file == "preregistration.toml" and lock.frozen.reason
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    included = pyproject["tool"]["hatch"]["build"]["targets"]["wheel"]["force-include"]
    assert included[LOCK_NAME] == f"agent_reflection/data/{LOCK_NAME}"
    assert included["preregistration.toml"] == "agent_reflection/data/preregistration.toml"


# --- the real CLI on a copy of the checkout ------------------------------------------------


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A checkout layout: src/agent_reflection, preregistration.toml + .lock, notebooks/."""
    root = tmp_path / "checkout"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(
        ROOT / "src" / "agent_reflection", root / "src" / "agent_reflection", ignore=ignore
    )
    shutil.copytree(ROOT / "notebooks", root / "notebooks", ignore=ignore)
    for name in ("preregistration.toml", LOCK_NAME):
        shutil.copyfile(ROOT / name, root / name)
    return root


def reflect(
    checkout: Path, *args: str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k != "REFLECT_PREREGISTRATION"}
    environ.update({"PYTHONPATH": str(checkout / "src"), "CI": "1", **(env or {})})
    return subprocess.run(
        [sys.executable, "-m", "agent_reflection", *args],
        capture_output=True,
        text=True,
        env=environ,
        cwd=cwd or checkout,
    )


def test_cli_status_for_each_route(checkout: Path, tmp_path: Path) -> None:
    ok = reflect(checkout, "prereg", "status")
    assert ok.returncode == 0, ok.stderr
    assert "matches the lock" in ok.stdout and "frozen:" in ok.stdout

    edited = tmp_path / "edited.toml"
    shutil.copyfile(checkout / "preregistration.toml", edited)
    edit(edited)
    env_run = reflect(checkout, "prereg", "status", env={"REFLECT_PREREGISTRATION": str(edited)})
    assert env_run.returncode == 1
    assert "chosen by $REFLECT_PREREGISTRATION" in env_run.stdout
    assert "EXPLORATORY" in env_run.stdout and "is not the registered" in env_run.stdout

    flag = reflect(checkout, "prereg", "status", "--prereg", str(edited))
    assert flag.returncode == 1 and "chosen by --prereg" in flag.stdout

    work = tmp_path / "work"
    work.mkdir()
    shutil.copyfile(edited, work / "preregistration.toml")
    local = reflect(checkout, "prereg", "status", cwd=work)
    assert local.returncode == 1 and "chosen by ./preregistration.toml" in local.stdout

    # a ./notebooks/ folder with an edited notebook: the code no longer matches the lock
    shutil.copytree(checkout / "notebooks", work / "notebooks")
    (work / "preregistration.toml").unlink()
    with (work / "notebooks" / "p1_calibration.py").open("a", encoding="utf-8") as f:
        f.write("\n# one more line\n")
    notebooks = reflect(checkout, "prereg", "status", cwd=work)
    assert notebooks.returncode == 1 and "chosen by ./notebooks" in notebooks.stdout
    assert "changed: notebooks/p1_calibration.py; notebooks taken from ./notebooks" in (
        notebooks.stdout
    )

    edit(checkout / "preregistration.toml")
    in_place = reflect(checkout, "prereg", "status", cwd=tmp_path)
    assert in_place.returncode == 1 and "was edited after it was registered" in in_place.stdout

    (checkout / LOCK_NAME).unlink()
    unlocked = reflect(checkout, "prereg", "status", cwd=tmp_path)
    assert unlocked.returncode == 1 and f"no {LOCK_NAME}" in unlocked.stdout


@pytest.mark.slow
def test_cli_freeze_writes_and_amends(checkout: Path) -> None:
    (checkout / LOCK_NAME).unlink()
    missing = reflect(checkout, "prereg", "freeze")
    assert missing.returncode == 2 and "Missing option '--reason'" in missing.stderr
    empty = reflect(checkout, "prereg", "freeze", "--reason", "  ")
    assert empty.returncode == 2 and not (checkout / LOCK_NAME).exists()

    first = reflect(checkout, "prereg", "freeze", "--reason", "agreed in review")
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith("frozen: preregistration.toml SHA-256 ")
    assert reflect(checkout, "prereg", "status").returncode == 0
    again = reflect(checkout, "prereg", "freeze", "--reason", "no change")
    assert again.returncode == 0 and again.stdout.startswith("unchanged:")

    edit(checkout / "preregistration.toml")
    assert reflect(checkout, "prereg", "status").returncode == 1
    amended = reflect(checkout, "prereg", "freeze", "--reason", "seed fixed by the stats review")
    assert amended.returncode == 0 and amended.stdout.startswith("amended: ")
    status = reflect(checkout, "prereg", "status")
    assert status.returncode == 0
    assert "— agreed in review" in status.stdout
    assert "amended:" in status.stdout and "— seed fixed by the stats review" in status.stdout

    bad = checkout / "preregistration.toml"
    bad.write_text(bad.read_text().replace("version = 1", "version = 2"))
    refused = reflect(checkout, "prereg", "freeze", "--reason", "broken")
    assert refused.returncode == 1 and "version must be 1" in refused.stderr
    assert len(parse_lock((checkout / LOCK_NAME).read_text("utf-8"), source="lock").amendments) == 1


# --- a run: every page says EXPLORATORY with the reason; results record registration and data


def _board(tmp_path: Path, checkout: Path) -> Path:
    csv = tmp_path / "tasks.csv"
    rows = ["task_ref,created_at,completed_at,status"]
    rows += [f"T-{i},2024-01-01T00:00:00Z,2024-01-0{1 + i % 5}T00:00:00Z,done" for i in range(12)]
    csv.write_text("\n".join(rows) + "\n", "utf-8")
    db = tmp_path / "board.duckdb"
    loaded = reflect(checkout, "load", "board", str(csv), "--format", "csv", "--db", str(db))
    assert loaded.returncode == 0, loaded.stderr
    return db


@pytest.mark.slow
def test_run_in_place_edit_is_exploratory_on_every_page(checkout: Path, tmp_path: Path) -> None:
    db = _board(tmp_path, checkout)
    edit(checkout / "preregistration.toml")
    out = tmp_path / "reports"
    run = reflect(checkout, "run", "p3", "--db", str(db), "--out", str(out), "--run-id", "x")
    assert run.returncode == 0, run.stderr
    assert "p3: " in run.stdout and "(EXPLORATORY)" in run.stdout
    run_dir = out / "x"
    doc = json.loads((run_dir / "p3" / "results.json").read_text())
    assert doc["exploratory"] is True
    reason = "was edited after it was registered"
    assert reason in doc["preregistration"]["exploratory_reasons"][0]
    assert doc["registration"]["matches_lock"] is False
    assert doc["registration"]["route"] == "./preregistration.toml"
    summary = (run_dir / "summary.md").read_text()
    assert "EXPLORATORY — not a pre-registered result" in summary and reason in summary
    assert reason in (run_dir / "index.html").read_text()
    page = (run_dir / "p3" / "report.html").read_text()
    assert "EXPLORATORY RUN" in page and reason in page
    summary_page = (run_dir / "summary" / "report.html").read_text()
    assert "EXPLORATORY" in summary_page and reason in summary_page


@pytest.mark.slow
def test_run_records_registration_amendments_and_data(checkout: Path, tmp_path: Path) -> None:
    edit(checkout / "preregistration.toml", "window_days = 30", "window_days = 31")
    amended = reflect(checkout, "prereg", "freeze", "--reason", "P3 window agreed at 31 days")
    assert amended.returncode == 0, amended.stderr
    time.sleep(1.1)  # the lock and loads keep whole seconds: the load comes a second later
    db = _board(tmp_path, checkout)  # loaded after the amendment: pre-registered for it
    out = tmp_path / "reports"
    work = tmp_path / "elsewhere"
    work.mkdir()
    run = reflect(
        checkout, "run", "p3", "--db", str(db), "--out", str(out), "--run-id", "y", cwd=work
    )
    assert run.returncode == 0, run.stderr
    assert "EXPLORATORY" not in run.stdout
    run_dir = out / "y"
    doc = read_results(run_dir / "p3" / "results.json")  # validated against results.v1
    assert doc["exploratory"] is False and doc["registration"]["route"] == "registered"
    lock = parse_lock((checkout / LOCK_NAME).read_text("utf-8"), source="lock")
    # the newest amendment is this one (the checkout's lock may already hold others)
    amendment = doc["registration"]["amendments"][-1]
    assert len(doc["registration"]["amendments"]) == len(lock.amendments)
    assert amendment["reason"] == "P3 window agreed at 31 days"
    assert amendment["at"] == lock.amendments[-1].at
    assert doc["registration"]["frozen_at"] == lock.frozen.at
    data = doc["data"]
    tables = {t["table"]: t for t in data["tables"]}
    assert set(tables) == {"tasks", "task_events", "task_links", "task_commits", "commits"}
    assert tables["tasks"]["rows"] == 12 and tables["commits"]["rows"] == 0
    (load,) = tables["tasks"]["loads"]
    assert load["source"] == "board" and load["origin"].endswith("tasks.csv")
    assert data["loaded_at"] == load["finished_at"]
    assert (tables["tasks"]["time_min"], tables["tasks"]["time_max"]) == (
        "2024-01-01T00:00:00Z",
        "2024-01-05T00:00:00Z",
    )
    summary = (run_dir / "summary.md").read_text()
    assert (
        f"Pre-registration registered {lock.frozen.at}, amended {amendment['at']}, "
        f"data loaded {load['finished_at']}." in summary
    )
    assert f"Amended {amendment['at']}: P3 window agreed at 31 days" in summary
    page = (run_dir / "p3" / "report.html").read_text()
    assert "Pre-registered run" in page and "P3 window agreed at 31 days" in page


@pytest.mark.slow
def test_a_database_changed_during_the_run_fails_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agent_reflection.experiments.runner import ExperimentFailed, run_experiments
    from agent_reflection.store.db import connect

    notebooks = tmp_path / "nb"
    shutil.copytree(ROOT / "notebooks", notebooks)
    source = (notebooks / "p3_detectability.py").read_text()
    marker = "con = nb.open_db(db_path)"
    assert marker in source
    sneak = (
        "from agent_reflection.store.db import connect as _connect\n"
        "_w = _connect(db_path)\n"
        "_w.execute(\"UPDATE tasks SET status = 'reopened' WHERE task_ref = 'T-1'\")\n"
        "_w.close()\n"
    )
    (notebooks / "p3_detectability.py").write_text(source.replace(marker, sneak + marker))
    monkeypatch.setenv("REFLECT_NOTEBOOKS", str(notebooks))
    db = _board(tmp_path, Path(__file__).resolve().parents[1])
    with pytest.raises(ExperimentFailed, match=r"changed while p3 read it \(rows or content hash"):
        run_experiments(["p3"], db_path=db, out_root=tmp_path / "r", run_id="moved")
    run_dir = tmp_path / "r" / "moved"
    assert (run_dir / "FAILED.txt").is_file() and not (run_dir / "summary.md").exists()
    con = connect(db, read_only=True)
    assert con.execute("SELECT status FROM tasks WHERE task_ref = 'T-1'").fetchone() == (
        "reopened",
    )  # the notebook did write: the run noticed
    con.close()


# --- issue 31: the registration covers the analysis -------------------------------------------


def freeze_with_code(
    toml: Path, code: dict[str, str], reason: str = "first registration", now: datetime = T0
) -> str:
    prereg = load_preregistration(toml)
    return freeze(
        lock_path_for(toml),
        file_name=toml.name,
        sha256=prereg.sha256,
        reason=reason,
        now=now,
        code=code,
    ).action


@pytest.fixture
def coded(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A registered file frozen with the analysis code of this checkout."""
    folder = tmp_path / "coded"
    folder.mkdir()
    toml = folder / "preregistration.toml"
    shutil.copyfile(TOML, toml)
    code = registered_code()
    assert freeze_with_code(toml, code) == "frozen"
    return toml, code


def test_the_lock_registers_the_analysis_code_and_a_changed_file_is_named(  # type: ignore[no-untyped-def]
    coded, elsewhere
) -> None:
    toml, code = coded
    same = load_for_run(None, {}, registered=toml, code=code, notebooks_from="registered")
    assert not same.exploratory, same.reasons
    stats = "agent_reflection/stats/auc.py"
    assert stats in code and "notebooks/p1_calibration.py" in code
    edited = {**code, stats: "0" * 64, "notebooks/p1_calibration.py": "1" * 64}
    p = load_for_run(None, {}, registered=toml, code=edited, notebooks_from="./notebooks (/x)")
    assert p.exploratory
    (reason,) = p.reasons
    assert reason.startswith("the analysis code differs from the code the lock registers")
    assert f"changed: {stats}, notebooks/p1_calibration.py" in reason or (
        "changed: " in reason and stats in reason and "notebooks/p1_calibration.py" in reason
    )
    assert "notebooks taken from ./notebooks (/x)" in reason
    # a notebook the run did not execute is not compared; a new module is named
    partial = {k: v for k, v in code.items() if k != "notebooks/p2_git_history.py"}
    assert not load_for_run(None, {}, registered=toml, code=partial).exploratory
    extra = {**code, "agent_reflection/stats/new.py": "2" * 64}
    (added,) = load_for_run(None, {}, registered=toml, code=extra).reasons
    assert "not registered: agent_reflection/stats/new.py" in added


def test_a_lock_without_code_registers_no_analysis(registered, elsewhere) -> None:  # type: ignore[no-untyped-def]
    p = load_for_run(None, {}, registered=registered, code=registered_code())
    assert p.exploratory and "the lock registers no analysis code" in p.reasons[0]


def test_a_hand_edited_lock_is_detected_and_named(coded, elsewhere, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The route of issue 31: the lock hand-edited to the new file's SHA-256."""
    toml, code = coded
    lock = lock_path_for(toml)
    edit(toml, "power = 0.8", "power = 0.7")
    assert freeze_with_code(toml, code, "power 0.7", datetime(2026, 2, 1, tzinfo=UTC)) == "amended"
    good = lock.read_text("utf-8")
    old_sha = parse_lock(good, source="lock").newest.sha256
    edit(toml, "power = 0.7", "power = 0.6")
    new_sha = load_preregistration(toml).sha256
    lock.write_text(good.replace(f'sha256 = "{old_sha}"', f'sha256 = "{new_sha}"', 1), "utf-8")
    p = load_for_run(None, {}, registered=toml, code=code)
    assert p.exploratory and p.p1.power == 0.6
    (reason,) = p.reasons
    assert (
        reason.startswith("the lock is invalid: ") and "[[amendments]] #1: entry_sha256" in reason
    )
    assert "edited by hand" in reason and "restore the lock from version control" in reason

    # an entry appended by hand, without the hashes freeze writes
    appended = good + (
        f'\n[[amendments]]\nsha256 = "{new_sha}"\nprevious_sha256 = "{old_sha}"\n'
        'at = "2026-03-01T00:00:00Z"\nreason = "no threshold changed"\n'
    )
    lock.write_text(appended, "utf-8")
    (reason,) = load_for_run(None, {}, registered=toml, code=code).reasons
    assert "[[amendments]] #2: has no entry_sha256" in reason and "written by hand" in reason

    # an earlier entry edited (its reason): the next entry's chain names it
    frozen_reason = 'reason = "first registration"'
    lock.write_text(good.replace(frozen_reason, 'reason = "agreed"', 1), "utf-8")
    (reason,) = load_for_run(None, {}, registered=toml, code=code).reasons
    assert "[frozen]: entry_sha256" in reason  # the edited entry's own hash fails first

    lock.write_text(good, "utf-8")  # the history as written: a chain, so freeze appends to it
    chain = parse_lock(good, source="lock")
    assert chain.frozen.entry_sha256 and chain.amendments[0].previous_entry_sha256


def test_an_amendment_after_the_data_were_loaded() -> None:
    lock = Lock(
        "lock",
        "preregistration.toml",
        Entry("a" * 64, "2026-01-01T00:00:00Z", "first"),
        (Entry("b" * 64, "2026-02-01T00:00:00Z", "after the data", "a" * 64),),
    )
    before = {"load_id": 3, "source": "labels", "origin": "x.jsonl"}
    loads = [{**before, "finished_at": "2026-01-15T10:00:00Z"}]
    reason = amended_after_loads(lock, loads)
    assert reason is not None
    assert reason.startswith("the registration in force was amended (amendment #1) 2026-02-01")
    assert "load 3 (labels, x.jsonl) finished 2026-01-15T10:00:00Z" in reason
    # whole seconds: a load finished in the amendment's own second may have come first
    assert amended_after_loads(lock, [{**before, "finished_at": "2026-02-01T00:00:00Z"}])
    assert amended_after_loads(lock, [{**before, "finished_at": "2026-02-01T00:00:01Z"}]) is None
    assert amended_after_loads(lock, [{**before, "finished_at": None}]) is None

    # an entry that registers new code under the same file (an upgrade of the tool) changes no
    # rule: the rule-changing amendment before it stays the one in force
    upgraded = Lock(
        "lock",
        "preregistration.toml",
        lock.frozen,
        (*lock.amendments, Entry("b" * 64, "2026-03-01T00:00:00Z", "new code", "b" * 64)),
    )
    assert lock.newest_rules == upgraded.newest_rules == (1, lock.amendments[0])
    late = [{**before, "finished_at": "2026-02-15T00:00:00Z"}]
    assert amended_after_loads(upgraded, late) is None
    assert amended_after_loads(upgraded, loads) == reason


def test_every_parameter_is_compared_with_the_registered_value() -> None:
    registered = load_preregistration()
    used = params_dict(registered.p1) | {"power": 0.7}
    (difference,) = parameter_differences("p1", used, registered)
    assert difference.to_dict() == {"parameter": "p1.power", "used": 0.7, "registered": 0.8}
    assert difference.reason() == "parameter p1.power = 0.7 is not the registered 0.8"
    assert parameter_differences("p1", params_dict(registered.p1), registered) == ()
    dropped = {k: v for k, v in params_dict(registered.p1).items() if k != "seed"}
    assert [d.parameter for d in parameter_differences("p1", dropped, registered)] == ["p1.seed"]


def test_the_shipped_lock_is_a_chain_that_registers_the_committed_code() -> None:
    """After any change to the notebooks or the experiment, statistics or SQL code, register it:
    reflect prereg freeze --reason "what changed and why"."""
    lock = parse_lock((ROOT / LOCK_NAME).read_text("utf-8"), source="lock")
    newest = lock.newest
    assert newest.entry_sha256 is not None and newest.code is not None
    registered = newest.code_map or {}
    current = registered_code()
    differs = sorted(
        k for k in registered.keys() | current.keys() if registered.get(k) != current.get(k)
    )
    assert differs == [], (
        f"the analysis code differs from the lock's newest entry ({newest.at}): {differs}; "
        'register it with reflect prereg freeze --reason "..."'
    )


def _labels(tmp_path: Path, checkout: Path, db: Path) -> None:
    path = tmp_path / "answers.jsonl"
    rows = [
        {
            "question_id": f"q{i // 2}",
            "model": f"m{i % 2}",
            "confidence": 0.8 + (i % 5) / 25,
            "correct": i % 3 != 0,
        }
        for i in range(40)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    loaded = reflect(checkout, "load", "labels", str(path), "--db", str(db))
    assert loaded.returncode == 0, loaded.stderr


@pytest.mark.slow
def test_run_with_a_local_notebook_that_changes_a_parameter_is_exploratory(
    checkout: Path, tmp_path: Path
) -> None:
    """The route of issue 31: a ./notebooks/ folder whose P1 notebook adds one line setting
    power to 0.7. The run names the notebook and the parameter, in results.json (beside the
    registered value), the summary and --json."""
    frozen = reflect(checkout, "prereg", "freeze", "--reason", "code of this checkout")
    assert frozen.returncode == 0, frozen.stderr
    db = tmp_path / "labels.duckdb"
    time.sleep(1.1)  # the lock and loads keep whole seconds: the load comes a second later
    _labels(tmp_path, checkout, db)  # loaded after the registration
    work = tmp_path / "work"
    shutil.copytree(checkout / "notebooks", work / "notebooks")
    notebook = work / "notebooks" / "p1_calibration.py"
    marker = "con = nb.open_db(db_path)\n"
    source = notebook.read_text("utf-8")
    assert marker in source
    bent = (
        "import dataclasses\n"
        "prereg = dataclasses.replace(prereg, p1=dataclasses.replace(prereg.p1, power=0.7))\n"
    )
    notebook.write_text(source.replace(marker, marker + bent), "utf-8")
    out = tmp_path / "reports"
    run = reflect(
        checkout, "run", "p1", "--db", str(db), "--out", str(out), "--run-id", "bent",
        "--json", cwd=work,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    printed = json.loads(run.stdout)["experiments"]["p1"]
    assert printed["exploratory"] is True
    reasons = printed["exploratory_reasons"]
    code_reason = next(r for r in reasons if r.startswith("the analysis code differs"))
    assert "changed: notebooks/p1_calibration.py" in code_reason
    assert f"notebooks taken from ./notebooks ({work / 'notebooks'})" in code_reason
    assert "parameter p1.power = 0.7 is not the registered 0.8" in reasons
    doc = read_results(out / "bent" / "p1" / "results.json")
    assert doc["exploratory"] is True
    assert doc["preregistration"]["exploratory_reasons"] == reasons
    assert doc["parameters"]["power"] == 0.7
    check = doc["parameter_check"]
    assert check["registered"]["power"] == 0.8
    assert check["differences"] == [{"parameter": "p1.power", "used": 0.7, "registered": 0.8}]
    assert doc["code"]["files"]["notebooks/p1_calibration.py"] != doc["code"]["registered_sha256"]
    assert doc["code"]["sha256"] != doc["code"]["registered_sha256"]
    summary = (out / "bent" / "summary.md").read_text("utf-8")
    assert "parameter p1.power = 0.7 is not the registered 0.8" in summary
    assert "changed: notebooks/p1_calibration.py" in summary
    # the notebook's own banner said pre-registered: the runner stamps the page
    page = (out / "bent" / "p1" / "report.html").read_text("utf-8")
    stamp = page.index("EXPLORATORY RUN — not a pre-registered result</strong> (found by")
    assert page.index("parameter p1.power = 0.7 is not the registered 0.8") > stamp
    assert stamp < page.index("Pre-registered run")


@pytest.mark.slow
def test_run_after_an_amendment_made_once_the_data_were_loaded_is_exploratory(
    checkout: Path, tmp_path: Path
) -> None:
    """The route of issue 31: `reflect prereg freeze --reason ...` after the data were loaded."""
    db = _board(tmp_path, checkout)
    edit(checkout / "preregistration.toml", "window_days = 30", "window_days = 31")
    amended = reflect(checkout, "prereg", "freeze", "--reason", "after seeing the board")
    assert amended.returncode == 0, amended.stderr
    out = tmp_path / "reports"
    run = reflect(checkout, "run", "p3", "--db", str(db), "--out", str(out), "--run-id", "late")
    assert run.returncode == 0, run.stderr
    doc = read_results(out / "late" / "p3" / "results.json")
    assert doc["exploratory"] is True
    (reason,) = doc["preregistration"]["exploratory_reasons"]
    assert reason.startswith("the registration in force was amended (amendment #")
    (load,) = {ld["load_id"]: ld for t in doc["data"]["tables"] for ld in t["loads"]}.values()
    assert f"load {load['load_id']} (board, {load['origin']}) finished {load['finished_at']}" in (
        reason
    )
    assert "EXPLORATORY because the registration in force was amended" in run.stdout
