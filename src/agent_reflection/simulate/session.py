"""Simulate one coding-agent session end to end, for the demo and for tests.

:func:`simulate_session` builds a scratch git repository, makes an agent-like change (a commit
on a feature branch plus uncommitted edits), writes the agent's self-report file, runs the real
Stop hook as a subprocess with a Stop event on stdin — exactly as Claude Code does — and returns
the sidecar it wrote, validated.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from agent_reflection.errors import ReflectionError
from agent_reflection.reflection.record import (
    Reflection,
    SelfReport,
    parse_self_report,
    validate_sidecar,
)

DEFAULT_SESSION_ID = "demo-0001"
FEATURE_BRANCH = "feature/session-expiry"

#: The project before the agent starts: path -> content.
BASE_FILES: dict[str, str] = {
    "README.md": "# shop-api\n\nA small shop backend.\n",
    "src/shop/cart.py": "def total(items):\n    return sum(i.price * i.qty for i in items)\n",
    "src/shop/auth/session.py": "SESSION_TTL_SECONDS = 3600\n",
    "tests/test_cart.py": "def test_total():\n    assert True\n",
}
#: What the agent commits on its feature branch.
COMMITTED_CHANGES: dict[str, str] = {
    "src/shop/auth/session.py": (
        "SESSION_TTL_SECONDS = 900\n\n\ndef expired(age_seconds):\n"
        "    return age_seconds >= SESSION_TTL_SECONDS\n"
    ),
}
#: What the agent leaves uncommitted when it stops.
UNCOMMITTED_CHANGES: dict[str, str] = {
    "tests/test_session_expiry.py": (
        "from shop.auth.session import expired\n\n\ndef test_expired():\n    assert expired(900)\n"
    ),
    "README.md": "# shop-api\n\nA small shop backend. Sessions now expire after 15 minutes.\n",
}
#: The agent's answers to the self-report questions.
DEFAULT_SELF_REPORT: SelfReport = parse_self_report(
    {
        "confidence": 0.7,
        "most_likely_wrong": {
            "surface": "auth",
            "description": "clients that cache the old 1-hour TTL may log users out unexpectedly",
        },
        "known_not_in_diff": "the mobile app reads SESSION_TTL_SECONDS from a config endpoint",
    }
)


class SimulationFailed(ReflectionError):
    """The simulated session could not run (git missing, or the hook misbehaved)."""


@dataclass(frozen=True)
class SimulatedSession:
    """The scratch repository and the sidecar the hook wrote."""

    repo: Path
    sidecar_path: Path
    record: Reflection
    hook_stderr: str = ""


def simulate_session(
    workdir: Path,
    *,
    self_report: SelfReport | Mapping[str, Any] | None = DEFAULT_SELF_REPORT,
    mode: str = "solo",
) -> SimulatedSession:
    """Run one simulated session (as ``demo-agent``, session :data:`DEFAULT_SESSION_ID`) in
    ``workdir``.

    ``self_report=None`` simulates an agent that wrote no self-report (the sidecar is then
    ``degraded``); a mapping is written as given (a malformed one too). Raises
    :class:`SimulationFailed` when git is missing or the hook breaks its contract (non-zero
    exit, anything on stdout, no sidecar).
    """
    repo = workdir / "shop-api"
    if repo.exists():
        raise SimulationFailed(f"{repo} already exists; pick an empty folder for the demo")
    repo.mkdir(parents=True)
    _make_history(repo)
    if self_report is not None:
        text = (
            self_report.to_json()
            if isinstance(self_report, SelfReport)
            else json.dumps(self_report, indent=2)
        )
        write_files(repo, {".reflection/input.json": text + "\n"})
    env = {k: v for k, v in os.environ.items() if not k.startswith("REFLECTION_")}
    env.update(REFLECTION_MODE=mode, REFLECTION_AGENT="demo-agent")
    stderr = run_stop_hook(DEFAULT_SESSION_ID, repo, workdir, env)
    found = sorted((repo / ".reflection" / "sidecars").glob("*.reflection.json"))
    if not found:
        raise SimulationFailed(f"the Stop hook wrote no sidecar: {stderr or 'no diagnostics'}")
    path = found[-1]
    record = validate_sidecar(json.loads(path.read_text("utf-8")), source=str(path))
    return SimulatedSession(repo, path, record, stderr)


def _make_history(repo: Path) -> None:
    env = {**os.environ, **commit_env("Demo Agent", "agent@example.invalid")}
    git(repo, ["init", "-q", "-b", "main"], env)
    write_files(repo, BASE_FILES)
    git(repo, ["add", "-A"], env)
    git(repo, ["commit", "-q", "-m", "Initial shop backend"], env)
    git(repo, ["checkout", "-q", "-b", FEATURE_BRANCH], env)
    write_files(repo, COMMITTED_CHANGES)
    git(repo, ["commit", "-q", "-am", "Shorten sessions to 15 minutes"], env)
    write_files(repo, UNCOMMITTED_CHANGES)


# --- shared by the simulators -------------------------------------------------------------------


def git(repo: Path, args: Sequence[str], env: Mapping[str, str]) -> str:
    """``git args`` in ``repo`` with the environment ``env``, without the user's global and
    system git configuration (their signing or hooks must not interfere); its output, stripped.
    Raises :class:`SimulationFailed` when git is missing or the command fails."""
    env = {**env, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    try:
        done = subprocess.run(
            ["git", *args],
            cwd=repo,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
    except FileNotFoundError:
        raise SimulationFailed("git is not installed or not on PATH; the demo needs git") from None
    except subprocess.CalledProcessError as exc:
        raise SimulationFailed(f"`git {' '.join(args)}` failed in {repo}: {exc.stderr}") from None
    return done.stdout.strip()


def commit_env(name: str, email: str, when: datetime | None = None) -> dict[str, str]:
    """Git's variables for a commit by ``name <email>``, dated ``when`` (else now)."""
    env = {
        "GIT_AUTHOR_NAME": name,
        "GIT_AUTHOR_EMAIL": email,
        "GIT_COMMITTER_NAME": name,
        "GIT_COMMITTER_EMAIL": email,
    }
    if when is not None:
        env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = when.isoformat()
    return env


def write_files(root: Path, files: Mapping[str, str]) -> None:
    """Write each ``relative path: text`` under ``root``, making folders as needed."""
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def run_stop_hook(session_id: str, repo: Path, transcripts: Path, env: Mapping[str, str]) -> str:
    """Run the Stop hook in ``repo`` with the event Claude Code sends it (the transcript named
    after the session in ``transcripts``); its stderr (see :func:`run_hook`)."""
    event = {
        "session_id": session_id,
        "transcript_path": str(transcripts / f"{session_id}.jsonl"),
        "cwd": str(repo),
        "permission_mode": "default",
        "hook_event_name": "Stop",
        "stop_hook_active": False,
    }
    return run_hook("agent_reflection.hooks.stop", event, repo, env)


def run_hook(module: str, event: Mapping[str, Any], cwd: Path, env: Mapping[str, str]) -> str:
    """Run a Claude Code hook as Claude Code does (the event on stdin); its stderr. Raises
    :class:`SimulationFailed` when it breaks its contract: exit 0, nothing on stdout."""
    done = subprocess.run(
        [sys.executable, "-m", module],
        input=json.dumps(event).encode(),
        cwd=cwd,
        env=env,
        capture_output=True,
        timeout=60,
        check=False,
    )
    stderr = done.stderr.decode("utf-8", "replace")
    if done.returncode != 0 or done.stdout:
        raise SimulationFailed(
            f"{module} broke its contract (exit {done.returncode}, stdout {done.stdout!r}): "
            f"{stderr}"
        )
    return stderr
