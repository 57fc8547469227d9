"""Tier 2 against a real HTTP server on 127.0.0.1, and tier 3's mutation requests."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from _runlog import History, T
from agent_reflection.cycle.config import CycleConfig, LLMConfig, load_config
from agent_reflection.cycle.engine import run_cycle
from agent_reflection.cycle.llm import LLMCallFailed, chat
from agent_reflection.cycle.mutations import ALLOWED_TOOLS, MAX_ROUNDS

ANSWER = (
    "The nightly task fails every run.\n\n"
    "SKILL_ACTION: rewrite data/skills/report.md so it checks the mail server first\n\n"
    '{"skill_actions": ["retire data/skills/old.md"], '
    '"task_actions": [{"content": "nightly", "ai_prompt": "Shorter prompt"}]}'
)


def completion(text: str) -> dict[str, Any]:
    return {"choices": [{"message": {"role": "assistant", "content": text}}]}


@dataclass
class Script:
    """What the server answers, one entry per request: (status, body, delay seconds)."""

    replies: list[tuple[int, bytes, float]] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)


@pytest.fixture
def server() -> Iterator[tuple[str, Script]]:
    script = Script()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", 0))
            body = json.loads(self.rfile.read(length))
            script.requests.append(
                {"path": self.path, "body": body, "auth": self.headers.get("Authorization")}
            )
            status, payload, delay = script.replies.pop(0) if script.replies else (200, b"{}", 0.0)
            time.sleep(delay)
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (timeout test)

        def log_message(self, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1", script
    finally:
        httpd.shutdown()
        httpd.server_close()


def ok(text: str) -> tuple[int, bytes, float]:
    return (200, json.dumps(completion(text)).encode(), 0.0)


def llm(url: str, **kw: Any) -> LLMConfig:
    base = LLMConfig(
        url=url,
        model="local-model",
        api_key="k-test",
        timeout_seconds=2.0,
        max_retries=2,
        backoff_seconds=0.0,
    )
    return replace(base, **kw)


def test_success(server: tuple[str, Script]) -> None:
    url, script = server
    script.replies.append(ok("fine"))
    answer = chat(llm(url), "hello")
    assert (answer.text, answer.attempts) == ("fine", 1)
    request = script.requests[0]
    assert request["path"] == "/v1/chat/completions"
    assert request["auth"] == "Bearer k-test"
    assert request["body"]["model"] == "local-model"
    assert request["body"]["messages"] == [{"role": "user", "content": "hello"}]


def test_5xx_then_success_retries_with_backoff(server: tuple[str, Script]) -> None:
    url, script = server
    script.replies += [(503, b"busy", 0.0), (500, b"oops", 0.0), ok("fine")]
    waits: list[float] = []
    answer = chat(llm(url, backoff_seconds=0.5), "hi", sleep=waits.append)
    assert (answer.text, answer.attempts) == ("fine", 3)
    assert waits == [0.5, 1.0]


def test_timeout_is_retried_then_fails(server: tuple[str, Script]) -> None:
    url, script = server
    # The server answers 10 s late (50 times the client's limit, so a loaded machine cannot
    # deliver the answer in time); its sleeping handler threads are daemons and do not hold
    # the test up.
    script.replies += [(200, b"{}", 10.0)] * 2
    with pytest.raises(LLMCallFailed, match=r"within 0\.2 s.*2 attempts"):
        chat(llm(url, timeout_seconds=0.2, max_retries=1), "hi", sleep=lambda s: None)
    assert len(script.requests) == 2


def test_4xx_is_not_retried(server: tuple[str, Script]) -> None:
    url, script = server
    script.replies += [(401, b"no", 0.0), ok("never")]
    with pytest.raises(LLMCallFailed, match="HTTP 401"):
        chat(llm(url), "hi", sleep=lambda s: None)
    assert len(script.requests) == 1


@pytest.mark.parametrize(
    "payload",
    [b"not json", b'{"choices": []}', b'{"choices": [{"message": {"content": 3}}]}'],
    ids=["not-json", "no-choices", "content-not-text"],
)
def test_malformed_answers_fail_clearly(server: tuple[str, Script], payload: bytes) -> None:
    url, script = server
    script.replies.append((200, payload, 0.0))
    with pytest.raises(LLMCallFailed, match=r"choices|not text"):
        chat(llm(url), "hi")


def failing_history(tmp_path: Path) -> Any:
    history = History().task("nightly")
    history.outcomes(["failed"] * 3, task_id="nightly")
    return history.load(tmp_path)


def test_tiers_2_and_3_after_findings(server: tuple[str, Script], tmp_path: Path) -> None:
    url, script = server
    script.replies.append(ok(ANSWER))
    out_dir = tmp_path / "mutations"
    config = replace(CycleConfig(), llm=llm(url), mutation_dir=str(out_dir))
    con = failing_history(tmp_path)
    result = run_cycle(con, config, now=T)
    prompt = script.requests[0]["body"]["messages"][0]["content"]
    assert "consecutive_failures" in prompt and "task nightly" in prompt
    assert "## Recent Failed Sub-Sessions" in prompt and "{findings}" not in prompt
    assert result.analysis.status == "ok"
    assert result.analysis.skill_actions == (
        "rewrite data/skills/report.md so it checks the mail server first",
        "retire data/skills/old.md",
    )
    row = con.execute("SELECT status, answer, skill_actions, task_actions FROM analyses").fetchone()
    assert row[0] == "ok" and row[1] == ANSWER
    assert json.loads(row[3]) == [{"content": "nightly", "ai_prompt": "Shorter prompt"}]
    requests = [json.loads(p.read_text()) for p in sorted(out_dir.glob("*.json"))]
    assert sorted(r["objective"] for r in requests) == sorted(result.analysis.skill_actions)
    assert all(r["tool_names"] == list(ALLOWED_TOOLS) for r in requests)
    assert all(r["max_rounds"] == MAX_ROUNDS for r in requests)
    types = [t[0] for t in con.execute("SELECT type FROM events ORDER BY event_id").fetchall()]
    assert types == [
        "reflection.finding",
        "reflection.analysis_completed",
        "reflection.mutation_requested",
        "reflection.mutation_requested",
    ]


@pytest.mark.peer
def test_c3_no_findings_tier_2_not_called(server: tuple[str, Script], tmp_path: Path) -> None:
    url, script = server
    history = History().task("A")
    history.outcome("completed", 1)
    con = history.load(tmp_path)
    result = run_cycle(con, replace(CycleConfig(), llm=llm(url)), now=T)
    assert result.analysis.status == "skipped" and script.requests == []


@pytest.mark.peer
def test_c3_findings_without_endpoint_tier_2_skipped(tmp_path: Path) -> None:
    con = failing_history(tmp_path)
    result = run_cycle(con, load_config(None, env={}), now=T)
    assert result.analysis.status == "skipped"
    assert "no LLM endpoint configured" in result.analysis.detail
    assert con.execute("SELECT status, detail FROM analyses").fetchone()[0] == "skipped"


def test_failed_endpoint_is_recorded_not_raised(server: tuple[str, Script], tmp_path: Path) -> None:
    url, script = server
    script.replies += [(502, b"bad gateway", 0.0)] * 3
    config = replace(CycleConfig(), llm=llm(url))
    con = failing_history(tmp_path)
    result = run_cycle(con, config, now=T)
    assert result.analysis.status == "failed" and "HTTP 502" in result.analysis.detail


def test_user_prompt_template_and_toml_config(tmp_path: Path, server: tuple[str, Script]) -> None:
    url, script = server
    script.replies.append(ok("nothing to add"))
    template = tmp_path / "mine.txt"
    template.write_text("FINDINGS:\n{findings}\nTASKS:\n{active_tasks}\nkeep {braces}")
    toml = tmp_path / "cycle.toml"
    toml.write_text(
        f'[reflection]\nlookback_seconds = 7200\n[reflection.llm]\nurl = "{url}"\n'
        f'model = "m"\nprompt_path = "{template}"\nbackoff_seconds = 0\n'
    )
    config = load_config(toml, env={})
    assert config.lookback_seconds == 7200 and config.batch_threshold == 10
    con = failing_history(tmp_path)
    run_cycle(con, config, now=T)
    prompt = script.requests[0]["body"]["messages"][0]["content"]
    assert prompt.startswith("FINDINGS:\n- consecutive_failures") and prompt.endswith("{braces}")


def test_bad_toml_key_names_the_fix(tmp_path: Path) -> None:
    toml = tmp_path / "c.toml"
    toml.write_text("[reflection]\nlookback = 5\n")
    with pytest.raises(Exception, match=r"unknown key 'lookback'.*lookback_seconds"):
        load_config(toml, env={})
