"""One voice for ``reflect load ...``: ``--json``, the rejected hint, folders, progress bars,
and ``reflect cycle run``'s note when the data lie outside the window."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from _runlog import History, T
from agent_reflection.cli._groups import cli, register_all_commands
from sidecar_samples import sidecar, write


def invoke(*args: str) -> Result:
    register_all_commands()
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def labels_file(path: Path, good: int = 3, bad: int = 1) -> Path:
    rows = [json.dumps({"confidence": 0.1 * i, "correct": i % 2 == 0}) for i in range(good)]
    rows += [json.dumps({"confidence": 7, "correct": True})] * bad
    path.write_text("\n".join(rows) + "\n", "utf-8")
    return path


def transcript_file(path: Path) -> Path:
    line = {
        "type": "user",
        "uuid": "u1",
        "parentUuid": None,
        "sessionId": "sess-1",
        "timestamp": "2026-01-21T06:20:01.000Z",
        "cwd": "/tmp/p",
        "message": {"role": "user", "content": "hello"},
    }
    path.write_text(json.dumps(line) + "\n{not json\n", "utf-8")
    return path


def inputs(tmp_path: Path) -> dict[str, list[str]]:
    """A small input with one bad record for every loader that takes files."""
    write(tmp_path / "sc" / "a.reflection.json", sidecar(1))
    write(tmp_path / "sc" / "b.reflection.json", sidecar(2, confidence=2))
    runs = History().task("A")
    runs.outcomes(["failed", "done"])
    (tmp_path / "runs").mkdir()
    log = runs.write(tmp_path / "runs" / "h.jsonl")
    log.write_text(log.read_text("utf-8") + "{broken\n", "utf-8")
    board = tmp_path / "tasks.csv"
    board.write_text("id,title,created\nT-1,one,2025-01-01\n,no id,2025-01-02\n", "utf-8")
    return {
        "labels": [str(labels_file(tmp_path / "l.jsonl"))],
        "sidecars": [str(tmp_path / "sc")],
        "runs": [str(tmp_path / "runs")],
        "transcripts": [str(transcript_file(tmp_path / "t.jsonl"))],
        "board": [
            str(board),
            "--format",
            "csv",
            "--map",
            "task_ref=id",
            "--map",
            "created_at=created",
        ],
    }


@pytest.mark.parametrize("command", ["labels", "sidecars", "runs", "transcripts", "board"])
def test_json_is_one_document_with_the_load_summaries(tmp_path: Path, command: str) -> None:
    db = tmp_path / "r.duckdb"
    args = inputs(tmp_path)[command]
    result = invoke("load", command, *args, "--db", str(db), "--json")
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)  # the whole of stdout: one JSON document
    assert document["db"] == str(db)
    loads = document["loads"]
    assert loads and all(
        d["read"] == d["loaded"] + d["rejected"] + d["already_present"] for d in loads
    )
    assert loads[0]["rejected"] >= 1  # each input holds one bad record
    assert "see why with" not in result.stdout

    silent = invoke("load", command, *args, "--db", str(db), "--json", "--silent")
    again = json.loads(silent.stdout)["loads"][0]
    assert again["loaded"] == 0 and again["already_present"] == loads[0]["loaded"]


@pytest.mark.parametrize("command", ["labels", "sidecars", "runs", "transcripts", "board"])
def test_a_load_with_rejects_ends_with_the_hint(tmp_path: Path, command: str) -> None:
    db = str(tmp_path / "r.duckdb")
    result = invoke("load", command, *inputs(tmp_path)[command], "--db", db)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    hint = next(i for i, text in enumerate(lines) if "see why with: reflect rejected" in text)
    assert lines[hint - 1].startswith(f"{command} load 1 from")
    assert lines[hint].endswith("see why with: reflect rejected --load 1")
    listed = invoke("rejected", "--load", "1", "--db", db)
    assert "[load 1 " in listed.stdout


def test_no_hint_without_rejects(tmp_path: Path) -> None:
    path = labels_file(tmp_path / "clean.jsonl", bad=0)
    result = invoke("load", "labels", str(path), "--db", str(tmp_path / "r.duckdb"))
    assert "read 3 = loaded 3 + rejected 0" in result.stdout
    assert "see why" not in result.stdout


def test_load_runs_reads_the_run_logs_in_a_folder(tmp_path: Path) -> None:
    folder = tmp_path / "logs"
    for name in ("a", "b"):
        history = History().task(name.upper())
        history.outcomes(["failed"], task_id=name.upper())
        (folder / "nested").mkdir(parents=True, exist_ok=True)
        history.write(folder / "nested" / f"{name}.jsonl")
    (folder / "README.txt").write_text("not a run log")
    (folder / ".hidden").mkdir()
    (folder / ".hidden" / "c.jsonl").write_text("{broken\n")
    result = invoke("load", "runs", str(folder), "--db", str(tmp_path / "r.duckdb"), "--json")
    assert result.exit_code == 0, result.output
    origins = [Path(d["origin"]).name for d in json.loads(result.stdout)["loads"]]
    assert origins == ["a.jsonl", "b.jsonl"]

    empty = tmp_path / "empty"
    empty.mkdir()
    refused = invoke("load", "runs", str(empty), "--db", str(tmp_path / "r.duckdb"))
    assert refused.exit_code == 2 and "no run-log files in" in refused.output


def _stderr_on_a_tty(args: list[str], env: dict[str, str]) -> str:
    """Run ``reflect ARGS`` with stderr on a pseudo-terminal; returns what it wrote there."""
    main_fd, child_fd = pty.openpty()
    # A new pseudo-terminal is 0 columns wide, and a bar is drawn to the terminal's width.
    fcntl.ioctl(child_fd, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    proc = subprocess.Popen(
        [sys.executable, "-m", "agent_reflection", *args],
        stdout=subprocess.PIPE,
        stderr=child_fd,
        env=env,
    )
    os.close(child_fd)
    chunks = []
    while True:
        try:
            chunk = os.read(main_fd, 4096)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    proc.wait(timeout=120)
    os.close(main_fd)
    assert proc.returncode == 0
    return b"".join(chunks).decode("utf-8", "replace")


def test_labels_progress_bar_on_a_terminal_and_not_in_ci(tmp_path: Path) -> None:
    path = labels_file(tmp_path / "big.jsonl", good=25_000, bad=0)
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    args = ["load", "labels", str(path), "--db", str(tmp_path / "r.duckdb")]
    assert "rows" in _stderr_on_a_tty(args, env)  # the bar counts rows
    assert "rows" not in _stderr_on_a_tty([*args, "--corpus", "again"], {**env, "CI": "true"})


def test_cycle_run_says_when_the_data_lie_outside_the_window(tmp_path: Path) -> None:
    history = History().task("A")
    history.outcomes(["failed"] * 3)
    path = history.write(tmp_path / "h.jsonl")
    db = str(tmp_path / "r.duckdb")
    late = invoke("cycle", "run", str(path), "--now", "2026-06-01T00:00:00Z", "--db", db)
    assert late.exit_code == 0
    assert "0 finding(s)" in late.stdout
    assert "no loaded run outcome lies in the window" in late.stderr
    assert "pass --now latest" in late.stderr

    latest = invoke("cycle", "run", "--now", "latest", "--db", db)
    assert "1 finding(s)" in latest.stdout and "--now latest" not in latest.stderr
    inside = invoke("cycle", "run", "--now", T.isoformat(), "--db", db)
    assert "no loaded run outcome" not in inside.stderr
