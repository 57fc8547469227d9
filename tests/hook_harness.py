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


# --- the git-facts hooks: SessionStart, Stop and the repository's post-commit note hook -------

NOTES_REF = "refs/notes/reflection"


class GitLab:
    """Real hooks on real repositories: one private HOME, state folder and environment."""

    def __init__(self, tmp: Path, **extra: str | None) -> None:
        self.tmp = tmp
        self.state = tmp / "state"
        self.env = hook_env(
            tmp / "home", REFLECTION_MODE="solo", REFLECTION_STATE_DIR=str(self.state), **extra
        )
        (tmp / "home").mkdir(exist_ok=True)

    def git(self, repo: Path, *args: str, check: bool = True) -> str:
        done = subprocess.run(
            ["git", *args],
            cwd=repo,
            env=self.env,
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
        if check and done.returncode:
            raise AssertionError(f"git {' '.join(args)} failed: {done.stderr}")
        return done.stdout

    def init_repo(self, repo: Path, *, hooks: bool = True) -> Path:
        """A repository on ``main`` with one commit, ``.reflection/`` excluded, our git hooks."""
        repo.mkdir(parents=True)
        self.git(repo, "init", "-q", "-b", "main")
        (repo / "README.md").write_text("hello\n")
        self.git(repo, "add", "README.md")
        self.git(repo, "commit", "-q", "-m", "initial commit")
        (repo / ".git" / "info" / "exclude").write_text(".reflection/\n")
        if hooks:
            self.install_git_hooks(repo)
        return repo

    def install_git_hooks(self, repo: Path, *more: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "agent_reflection",
                "hook",
                "install",
                "--git",
                "--project-dir",
                str(repo),
                *more,
            ],
            cwd=repo,
            env=self.env,
            capture_output=True,
            text=True,
            errors="replace",  # it prints the work tree's path, whatever its bytes
            check=False,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        return done

    def start(self, repo: Path, session: str, source: str = "startup") -> HookRun:
        event = {
            "session_id": session,
            "source": source,
            "cwd": str(repo),
            "hook_event_name": "SessionStart",
            "transcript_path": str(self.tmp / "t.jsonl"),
        }
        run = run_hook(event, self.env, repo, command=SESSION_START_COMMAND)
        assert run.returncode == 0 and run.stdout == b"", run
        return run

    def stop(self, repo: Path, session: str) -> dict[str, Any]:
        """Run the Stop hook; the sidecar it wrote."""
        before = set(sidecars(repo / ".reflection" / "sidecars"))
        run = run_hook(payload(repo, session), self.env, repo)
        assert run.returncode == 0 and run.stdout == b"", run
        (new,) = set(sidecars(repo / ".reflection" / "sidecars")) - before
        return load(new)

    def commit(self, repo: Path, message: str, *paths: str) -> str:
        self.git(repo, "add", *(["--", *paths] if paths else ["-A"]))
        self.git(repo, "commit", "-q", "-m", message)
        return self.git(repo, "rev-parse", "HEAD").strip()

    def note(self, repo: Path, rev: str = "HEAD") -> dict[str, Any] | None:
        text = self.git(repo, "notes", f"--ref={NOTES_REF}", "show", rev, check=False)
        return json.loads(text) if text else None

    def noted_sessions(self, repo: Path, rev: str = "HEAD") -> list[str]:
        note = self.note(repo, rev)
        return [] if note is None else [s["session_id"] for s in note["sidecars"]]


SESSION_START_COMMAND = [sys.executable, "-m", "agent_reflection.hooks.session_start"]
POST_COMMIT_COMMAND = [sys.executable, "-m", "agent_reflection.hooks.post_commit"]
