"""Run the real Stop hook as Claude Code does: a subprocess with the event JSON on stdin.

Shared by the hook tests and the ask-mode fake harness. Not a test module itself.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SCRIPT = Path(sys.executable).with_name("reflect-stop-hook")
# Claude Code's own cap on consecutive Stop blocks (CLAUDE_CODE_STOP_HOOK_BLOCK_CAP default).
CLAUDE_BLOCK_CAP = 8


def hook_command() -> list[str]:
    """The installed console script when present, else ``python -m``."""
    if SCRIPT.exists():
        return [str(SCRIPT)]
    return [sys.executable, "-m", "agent_reflection.hooks.stop"]


def hook_env(home: Path, **extra: str | None) -> dict[str, str]:
    """A clean environment: no REFLECTION_* leaking in from the caller, a private HOME."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("REFLECTION_")}
    env.update(
        HOME=str(home),
        GIT_CONFIG_NOSYSTEM="1",
        GIT_AUTHOR_NAME="A",
        GIT_AUTHOR_EMAIL="a@example.com",
        GIT_COMMITTER_NAME="C",
        GIT_COMMITTER_EMAIL="c@example.com",
    )
    for key, value in extra.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def payload(repo: Path | str, session: str | None = "sess-1", **fields: Any) -> dict[str, Any]:
    event: dict[str, Any] = {
        "cwd": str(repo),
        "transcript_path": str(Path(repo) / "transcript.jsonl"),
        "hook_event_name": "Stop",
        "permission_mode": "default",
        "stop_hook_active": False,
    }
    if session is not None:
        event["session_id"] = session
    event.update(fields)
    return event


@dataclass(frozen=True)
class HookRun:
    returncode: int
    stdout: bytes
    stderr: str


def run_hook(
    stdin: dict[str, Any] | bytes | str,
    env: dict[str, str],
    cwd: Path | str,
    argv: list[str] | None = None,
    command: list[str] | None = None,
) -> HookRun:
    data = (
        json.dumps(stdin).encode()
        if isinstance(stdin, dict)
        else stdin.encode()
        if isinstance(stdin, str)
        else stdin
    )
    done = subprocess.run(
        [*(command or hook_command()), *(argv or [])],
        input=data,
        env=env,
        cwd=cwd,
        capture_output=True,
        timeout=60,
        check=False,
    )
    return HookRun(done.returncode, done.stdout, done.stderr.decode("utf-8", "replace"))


def sidecars(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.reflection.json")) if folder.is_dir() else []


def load(path: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(path.read_text("utf-8"))
    return loaded
