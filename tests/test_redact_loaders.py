"""No planted secret survives a loader: generated secrets of every format are planted in a
transcript, a run log (JSONL and a platform SQLite file) and sidecars, loaded through the real
CLI, then looked for in every column of every table, in the Parquet export and in reports."""

from __future__ import annotations

import json
import random
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import duckdb
import pytest

from _runlog import History, T, add_outcome, add_task, make_platform_db
from _secrets import Planted, planted
from agent_reflection.in_loop.cadence import CHECKPOINT_FLAG
from agent_reflection.store.db import connect
from cli_inprocess import reflect
from sidecar_samples import sidecar, write

SESSION = "3f2b8c1e-0000-4000-8000-000000000001"


def _line(kind: str, n: int, message: dict[str, Any]) -> str:
    return json.dumps(
        {
            "type": kind,
            "uuid": f"00000000-0000-4000-8000-{n:012d}",
            "parentUuid": None,
            "sessionId": SESSION,
            "timestamp": f"2026-01-01T00:{n // 60:02d}:{n % 60:02d}Z",
            "cwd": "/home/dev/app",
            "message": message,
        }
    )


def write_transcript(path: Path, secrets: list[Planted]) -> Path:
    """A Claude Code transcript: each secret in a prompt, assistant text, a Bash command, its
    result (with our checkpoint prompt), plus one line that is not JSON (rejected)."""
    lines: list[str] = []
    for i, s in enumerate(secrets):
        n = 4 * i
        lines.append(_line("user", n, {"role": "user", "content": f"deploy using {s.text}"}))
        lines.append(
            _line(
                "assistant",
                n + 1,
                {
                    "role": "assistant",
                    "content": [
                        {"type": "text", "text": f"I will use\n{s.text}"},
                        {
                            "type": "tool_use",
                            "id": f"toolu_{i:02d}",
                            "name": "Bash",
                            "input": {"command": f"echo '{s.text}' | deploy"},
                        },
                    ],
                },
            )
        )
        result = f"{CHECKPOINT_FLAG}\n3 tool calls since the last checkpoint\nenv: {s.text}"
        lines.append(
            _line(
                "user",
                n + 2,
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": f"toolu_{i:02d}", "content": result}
                    ],
                },
            )
        )
        lines.append(f"not json: {s.text}")
    path.write_text("\n".join(lines) + "\n", "utf-8")
    return path


def write_run_logs(folder: Path, secrets: list[Planted]) -> list[Path]:
    """A JSONL run log and a platform SQLite file holding every secret in every text field."""
    history = History()
    for i, s in enumerate(secrets):
        task = f"T{i}"
        history.task(task, ai_prompt=f"nightly job with {s.text}", last_result_summary=s.text)
        sid = history.outcome("failed", 1 + i, task_id=task, objective=f"run with {s.text}")
        history.step(sid, {"command": f"curl {s.text}"}, tool="bash")
        history.step(sid, f"export X={s.text}", tool="shell")
    # a task whose id holds a token, failing five times in a row: the cycle report names it
    streak = f"job-{next(s.secret for s in secrets if s.kind == 'github-token')}"
    history.task(streak, ai_prompt="publish the nightly build")
    history.outcomes(["failed"] * 5, task_id=streak, start_hours=0.5)
    jsonl = history.write(folder / "runs.jsonl")
    platform = make_platform_db(folder / "platform.db")
    for i, s in enumerate(secrets):
        add_task(platform, f"P{i}", f"prompt {s.text}")
        # within the hours of the JSONL history: the cycle report replays every few minutes
        at = T.timestamp() - 3600 * (i + 1)
        add_outcome(platform, f"ps{i}", "failed", at, task_id=f"P{i}", objective=s.text)
    return [jsonl, platform]


def write_sidecars(folder: Path, secrets: list[Planted]) -> Path:
    for i, s in enumerate(secrets):
        record = sidecar(
            i,
            known_not_in_diff=f"set {s.text} in CI",
            most_likely_wrong={"surface": "auth", "description": s.text},
        )
        write(folder / f"s{i}.reflection.json", record)
    write(folder / "bad.reflection.json", '{"schema": "reflection.v1", "oops": "' + "x")
    write(folder / "bad2.reflection.json", "not json " + secrets[0].text)
    return folder


def load_all(tmp_path: Path, secrets: list[Planted], *extra: str) -> Path:
    db = tmp_path / "planted.duckdb"
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    transcript = write_transcript(inputs / "session.jsonl", secrets)
    runs = write_run_logs(inputs, secrets)
    sidecars = write_sidecars(inputs / "sidecars", secrets)
    for args in (
        ("load", "transcripts", str(transcript)),
        ("load", "runs", *map(str, runs)),
        ("load", "sidecars", str(sidecars)),
    ):
        result = reflect(*args, "--db", str(db), "--silent", *extra)
        assert result.returncode == 0, result.stderr
    return db


def every_value(con: duckdb.DuckDBPyConnection) -> Iterable[tuple[str, str]]:
    """(table, the repr of each row) of every table of the database."""
    tables = [r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()]
    for table in tables:
        for row in con.execute(f'SELECT * FROM "{table}"').fetchall():
            yield table, repr(row)


def survivors(texts: Iterable[tuple[str, str]], secrets: list[Planted]) -> list[tuple[str, str]]:
    return [(where, s.kind) for where, text in texts for s in secrets if s.secret in text]


@pytest.fixture(scope="module")
def secrets() -> list[Planted]:
    return planted(random.Random(20260101))


def test_no_planted_secret_reaches_the_database_or_the_export(
    tmp_path: Path, secrets: list[Planted]
) -> None:
    db = load_all(tmp_path, secrets)
    con = connect(db)
    # the secrets went somewhere: every loader stored rows, and rejected the bad lines
    tables = ("messages", "tool_calls", "checkpoints", "run_outcomes", "run_steps", "run_tasks")
    counts = {
        t: con.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0]  # type: ignore[index]
        for t in (*tables, "reflections", "rejected")
    }
    assert all(counts.values()), counts
    placeholders = sum(text.count("[REDACTED:") for _, text in every_value(con))
    assert placeholders > 10 * len(secrets)
    assert survivors(every_value(con), secrets) == []
    con.close()

    out = tmp_path / "parquet"
    result = reflect("export", "--parquet", str(out), "--db", str(db))
    assert result.returncode == 0, result.stderr
    files = sorted(out.rglob("*.parquet"))
    assert files and not any("redaction_key" in str(f) for f in files)
    reader = duckdb.connect()
    exported = [
        (str(f), repr(reader.execute("SELECT * FROM read_parquet(?)", [str(f)]).fetchall()))
        for f in files
    ]
    assert sum(text.count("[REDACTED:") for _, text in exported) == placeholders
    assert survivors(exported, secrets) == []


def test_the_scan_finds_secrets_when_redaction_is_off(
    tmp_path: Path, secrets: list[Planted]
) -> None:
    """The control: with --no-redact every planted secret is in the database (and a warning
    says so), so the scan above can fail."""
    db = tmp_path / "plain.duckdb"
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    transcript = write_transcript(inputs / "session.jsonl", secrets)
    result = reflect("load", "transcripts", str(transcript), "--db", str(db), "--no-redact")
    assert result.returncode == 0 and "--no-redact" in result.stderr
    con = connect(db)
    found = {kind for _, kind in survivors(every_value(con), secrets)}
    assert found == {s.kind for s in secrets}


def test_same_secret_same_placeholder_across_tables(tmp_path: Path) -> None:
    """Joins still work: a token gets one placeholder in messages, tool_calls and run_steps."""
    token = "ghp_" + "aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6"
    secret = Planted("github-token", token, token)
    db = load_all(tmp_path, [secret])
    con = connect(db)
    marks = {
        text[text.index("[REDACTED:github-token:") :][:32]
        for _, text in every_value(con)
        if "[REDACTED:github-token:" in text
    }
    assert len(marks) == 1


def reports(tmp_path: Path, secrets: list[Planted], *extra: str) -> list[tuple[str, str]]:
    """The HTML of `reflect run in-loop` (transcripts) and `reflect run cycle` (run logs)."""
    tmp_path.mkdir()
    db = load_all(tmp_path, secrets, *extra)
    out = tmp_path / "reports"
    # the in-loop section replays the planted transcript file itself (not ../shared's runs)
    replay = ("--transcripts", str(tmp_path / "inputs"), "--agent-runs", str(tmp_path / "inputs"))
    for section, more in (("in-loop", replay), ("cycle", ())):
        result = reflect("run", section, "--db", str(db), "--out", str(out), "--silent", *more)
        assert result.returncode == 0, result.stderr
    html = [(str(p), p.read_text("utf-8")) for p in out.rglob("*.html")]
    assert len(html) == 2
    return html


@pytest.mark.slow(reason="`reflect run in-loop` and `reflect run cycle` with and without redaction")
def test_no_planted_secret_reaches_a_report(tmp_path: Path, secrets: list[Planted]) -> None:
    """The reports show ids, not agents' text: the control (--no-redact) finds the token a
    failing task's id holds in the cycle report; redacted, no planted secret is there."""
    plain = reports(tmp_path / "plain", secrets, "--no-redact")
    assert {kind for _, kind in survivors(plain, secrets)} == {"github-token"}
    redacted = reports(tmp_path / "redacted", secrets)
    assert survivors(redacted, secrets) == []
    assert any("job-[REDACTED:github-token:" in text for _, text in redacted)
