"""The cycle survives any LLM answer (issue 34, item 5): 1.2 MB of ``[[[...]]]`` (under the
byte cap) as the HTTP body or as the answer's text used to raise RecursionError, exit 1, leave
the failing task running and write no ``cycle_runs`` row. Now tier 2 fails (or finds no
actions) and tier 1's pause still happens, with its row."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import duckdb
import pytest
from click.testing import CliRunner

from agent_reflection.cli._groups import cli, register_all_commands
from test_cycle_actions import NOW, platform, source_status
from test_cycle_llm import Script, completion, server  # noqa: F401  (the loopback fixture)

pytestmark = pytest.mark.adversarial

DEPTH = 600_000  # 1.2 MB of brackets: far deeper than Python's recursion limit


def nested_body() -> bytes:
    return b"[" * DEPTH + b"]" * DEPTH


def nested_text() -> bytes:
    text = "Pause it.\n" + '{"a": ' * (DEPTH // 6) + "1" + "}" * (DEPTH // 6)
    return json.dumps(completion(text)).encode()


@pytest.mark.parametrize("answer", [nested_body, nested_text], ids=["body", "answer-text"])
def test_a_nested_answer_leaves_tier_1_standing(
    server: tuple[str, Script],  # noqa: F811
    tmp_path: Path,
    answer: Any,
) -> None:
    url, script = server
    script.replies.append((200, answer(), 0.0))
    src = platform(tmp_path)
    db = str(tmp_path / "db.duckdb")
    register_all_commands()
    result = CliRunner().invoke(
        cli,
        ["cycle", "run", str(src), "--now", str(NOW), "--apply", "--db", db],
        env={"REFLECT_LLM_URL": url, "REFLECT_LLM_MODEL": "m", "REFLECT_LLM_API_KEY": "k"},
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    assert len(script.requests) == 1  # tier 2 was asked
    assert source_status(src, "nightly") == "paused"  # tier 1 acted
    with duckdb.connect(db) as con:
        assert con.execute("SELECT applied FROM cycle_runs").fetchall() == [(True,)]
        status, detail = con.execute("SELECT status, detail FROM analyses").fetchone()  # type: ignore[misc]
    if answer is nested_body:
        assert status == "failed" and "nested too deeply" in detail
    else:
        assert status == "ok"  # the text is kept; no JSON tail could be read from it
    with sqlite3.connect(src) as platform_db:
        assert platform_db.execute("SELECT count(*) FROM tasks").fetchone() == (2,)
