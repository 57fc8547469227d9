"""``reflect load sidecars`` and ``reflect rejected`` from the command line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import agent_reflection.cli.load_sidecars
import agent_reflection.cli.rejected  # noqa: F401  (registers the command)
from agent_reflection.cli._groups import cli
from agent_reflection.store.db import connect
from cli_inprocess import reflect
from sidecar_samples import sidecar, write


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    for i in range(3):
        write(tmp_path / "s" / f"{i}.reflection.json", sidecar(i))
    write(tmp_path / "s" / "bad.reflection.json", sidecar(9, confidence=2))
    return tmp_path / "s"


def invoke(*args: str, env: dict[str, str] | None = None):
    return CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)


def test_load_prints_the_reconcile_line_and_how_to_see_rejections(folder, tmp_path):
    db = str(tmp_path / "r.duckdb")
    result = invoke("load", "sidecars", str(folder), "--db", db)
    assert result.exit_code == 0, result.output
    assert "sidecars load 1 from" in result.stdout
    assert "read 4 = loaded 3 + rejected 1 + already present 0" in result.stdout
    assert "reflect rejected --load 1" in result.stdout

    again = invoke("load", "sidecars", str(folder), "--db", db)
    assert "read 4 = loaded 0 + rejected 1 + already present 3" in again.stdout

    # the file rejected again is listed once, under the latest load that rejected it
    listed = invoke("rejected", "--db", db, "--load", "2")
    assert f"{folder / 'bad.reflection.json'}#/confidence" in listed.stdout
    assert "a number in [0, 1], got 2" in listed.stdout


def test_json_summary_is_machine_readable_and_silent_prints_nothing(folder, tmp_path):
    db = tmp_path / "r.duckdb"
    result = invoke("load", "sidecars", str(folder), "--db", str(db), "--json")
    summary = json.loads(result.stdout)
    assert (summary["read"], summary["loaded"], summary["rejected"]) == (4, 3, 1)
    assert summary["db"] == str(db)
    silent = invoke("load", "sidecars", str(folder), "--db", str(db), "--silent")
    assert silent.exit_code == 0 and silent.stdout == ""


def test_the_database_comes_from_reflect_db_when_no_db_option(folder, tmp_path):
    db = tmp_path / "from-env.duckdb"
    result = invoke("load", "sidecars", str(folder), "--json", env={"REFLECT_DB": str(db)})
    assert json.loads(result.stdout)["db"] == str(db)
    assert db.exists()


def test_a_missing_path_exits_1_and_records_no_load(folder, tmp_path):
    db = tmp_path / "r.duckdb"
    for paths in ([str(tmp_path / "nope")], [str(tmp_path / "nope"), str(folder)]):
        done = reflect("load", "sidecars", *paths, "--db", str(db))
        assert done.returncode == 1, done
        assert f"Error: {tmp_path / 'nope'}: no such file or folder" in done.stderr
        assert "nothing was loaded" in done.stderr and done.stdout == ""
    listed = reflect("rejected", "--db", str(db))
    assert listed.returncode == 0 and "no rejected records" in listed.stdout
    con = connect(db, read_only=True)
    try:
        assert con.execute("SELECT count(*) FROM loads").fetchone() == (0,)
    finally:
        con.close()


def test_nothing_readable_exits_1_unless_allowed(tmp_path):
    (tmp_path / "empty").mkdir()
    db = str(tmp_path / "r.duckdb")
    result = invoke("load", "sidecars", str(tmp_path / "empty"), "--db", db)
    assert result.exit_code == 1
    assert "no *.reflection.json files" in result.stderr
    allowed = invoke("load", "sidecars", str(tmp_path / "empty"), "--db", db, "--allow-empty")
    assert allowed.exit_code == 0


def test_rejected_json_lists_every_record_of_a_source(folder, tmp_path):
    db = str(tmp_path / "r.duckdb")
    invoke("load", "sidecars", str(folder), "--db", db)
    result = invoke("rejected", "--db", db, "--source", "sidecars", "--json")
    [record] = [json.loads(line) for line in result.stdout.splitlines()]
    assert record["location"].endswith("bad.reflection.json#/confidence")
    assert invoke("rejected", "--db", db, "--source", "git").stdout.strip() == (
        "no rejected records"
    )


def test_the_installed_reflect_command_loads_with_a_worker_pool(tmp_path):
    for i in range(2500):  # more than one chunk: parsed by worker processes
        write(tmp_path / "many" / f"{i // 500}" / f"{i}.reflection.json", sidecar(i))
    reflect = Path(sys.executable).with_name("reflect")
    out = subprocess.run(
        [
            str(reflect),
            "load",
            "sidecars",
            str(tmp_path / "many"),
            "--json",
            "--db",
            str(tmp_path / "r.duckdb"),
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    summary = json.loads(out.stdout)
    assert (summary["read"], summary["loaded"], summary["rejected"]) == (2500, 2500, 0)
