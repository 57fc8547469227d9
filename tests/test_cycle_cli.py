"""``reflect cycle run`` options: events as JSON lines, a disabled config, a bad clock."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from _runlog import History, T
from agent_reflection.cli import main
from agent_reflection.cli._groups import cli, register_all_commands


def invoke(*args: str) -> tuple[str, str, int]:
    register_all_commands()
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.stdout, result.stderr, result.exit_code


def test_events_jsonl_puts_only_events_on_stdout(tmp_path: Path) -> None:
    history = History().task("A")
    history.outcomes(["failed"] * 3)
    path = history.write(tmp_path / "h.jsonl")
    stdout, stderr, code = invoke(
        "cycle",
        "run",
        str(path),
        "--now",
        T.isoformat(),
        "--events-jsonl",
        "--db",
        str(tmp_path / "db.duckdb"),
    )
    assert code == 0
    events = [json.loads(line) for line in stdout.splitlines()]
    assert [e["type"] for e in events] == ["reflection.finding"]
    assert events[0]["data"]["subject_id"] == "A"
    assert events[0]["data"]["dry_run"] is True
    assert "consecutive_failures" in stderr and "DRY RUN" in stderr


@pytest.mark.parametrize(("limit", "printed"), [("2", 2), ("0", 5), (None, 5)])
def test_limit_caps_the_printed_findings_not_the_stored_ones(
    tmp_path: Path, limit: str | None, printed: int
) -> None:
    history = History()
    for task in "ABCDE":
        history.task(task)
        history.outcomes(["failed"] * 3, task_id=task)
    path = history.write(tmp_path / "h.jsonl")
    db_path = tmp_path / "db.duckdb"
    args = ["cycle", "run", str(path), "--now", T.isoformat(), "--db", str(db_path)]
    stdout, _, code = invoke(*args, *(["--limit", limit] if limit else []))
    assert code == 0
    assert "cycle run 1 at" in stdout and ": 5 finding(s)" in stdout
    assert stdout.count("consecutive_failures") == printed
    more = "  ... 3 more finding(s) not printed (--limit 2); every one is stored: table findings, "
    assert (
        (more + "cycle_run_id 1") in stdout.splitlines() if printed == 2 else "more" not in stdout
    )
    import duckdb

    with duckdb.connect(str(db_path), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM findings").fetchone() == (5,)


def test_disabled_config_does_nothing(tmp_path: Path) -> None:
    toml = tmp_path / "c.toml"
    toml.write_text("[reflection]\nenabled = false\n")
    stdout, _, code = invoke("cycle", "run", "--config", str(toml), "--db", str(tmp_path / "d"))
    assert code == 0 and "disabled" in stdout
    assert not (tmp_path / "d").exists()


def test_bad_clock_is_a_clean_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["cycle", "run", "--now", "yesterday", "--db", str(tmp_path / "db.duckdb")])
    assert exit_info.value.code == 1
    assert "--now: 'yesterday' is not an ISO-8601 time" in capsys.readouterr().err


def test_now_latest_on_an_empty_database(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        main(["cycle", "run", "--now", "latest", "--db", str(tmp_path / "db.duckdb")])
    assert "run_outcomes is empty; load runs first" in capsys.readouterr().err


_PASS_WITHOUT_PANDAS = """
import sys
from agent_reflection.cli import main
try:
    main({argv!r})
except SystemExit as exit:
    assert not exit.code, exit.code
print("PANDAS=" + str("pandas" in sys.modules))
"""


def test_a_pass_does_not_import_pandas(tmp_path: Path) -> None:
    """DuckDB's client imports pandas (0.3 s) on the first parametrised ``execute``: a whole
    ``reflect cycle run`` (rules, findings and events stored) runs without it."""
    history = History().task("A")
    history.outcomes(["failed"] * 3)
    history.load(tmp_path).close()
    argv = ["cycle", "run", "--now", T.isoformat(), "--db", str(tmp_path / "cycle.duckdb")]
    done = subprocess.run(
        [sys.executable, "-c", _PASS_WITHOUT_PANDAS.format(argv=argv)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "consecutive_failures" in done.stdout
    assert done.stdout.rstrip().endswith("PANDAS=False"), done.stdout
