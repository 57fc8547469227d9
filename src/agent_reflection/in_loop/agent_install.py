"""Install the reflection (unblocker) agent definition into a ``.claude/agents/`` folder.

The shipped file ends with a stamp ``<!-- agent-reflection sha256:<hex> -->`` of its body, so
a later install can tell an untouched copy (safe to update) from one the user edited (kept
unless ``force``).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from agent_reflection import config
from agent_reflection.errors import ReflectionError

AGENT_NAME = "reflection-unblocker"
AGENT_FILE = f"{AGENT_NAME}.md"
_STAMP_PREFIX = "<!-- agent-reflection sha256:"


class AgentFileModified(ReflectionError):
    """The installed agent file was edited by hand; installing would overwrite the edits."""

    def __init__(self, path: Path) -> None:
        self.path = path
        super().__init__(
            f"{path} was modified since it was installed; keep your edits, or re-run with "
            "--force to replace it with the shipped definition"
        )


class AgentInstallError(ReflectionError):
    """The agent file could not be read or written; the message names the file and the fix."""


@dataclass(frozen=True)
class AgentInstall:
    path: Path
    action: str  # installed | unchanged | updated | overwritten

    def line(self) -> str:
        return f"{self.action}: {self.path}"


def shipped_definition() -> str:
    """The agent definition as shipped, stamped with its own hash."""
    body = resources.files("agent_reflection").joinpath(f"data/agents/{AGENT_FILE}")
    text = body.read_text("utf-8")
    return stamp(text)


def stamp(body: str) -> str:
    body = body.rstrip("\n") + "\n"
    return f"{body}\n{_STAMP_PREFIX}{_digest(body)} -->\n"


def _digest(body: str) -> str:
    return hashlib.sha256(body.encode("utf-8")).hexdigest()


def is_untouched(text: str) -> bool:
    """True when ``text`` still matches the stamp it was installed with."""
    head, sep, tail = text.rstrip("\n").rpartition("\n" + _STAMP_PREFIX)
    if not sep or not tail.endswith(" -->"):
        return False
    return _digest(head.rstrip("\n") + "\n") == tail[: -len(" -->")]


def agents_dir(scope: str, project_dir: str | os.PathLike[str] = ".") -> Path:
    """``<project>/.claude/agents`` or the user's ``~/.claude/agents`` ($CLAUDE_CONFIG_DIR)."""
    if scope == "project":
        return Path(project_dir) / ".claude" / "agents"
    if scope == "user":
        root = config.env_text(config.CLAUDE_CONFIG_DIR) or str(Path.home() / ".claude")
        return Path(root) / "agents"
    raise ValueError(f"scope must be 'project' or 'user', got {scope!r}")


def install_agent(folder: str | os.PathLike[str], *, force: bool = False) -> AgentInstall:
    """Write the agent definition into ``folder`` (idempotent; edits kept unless ``force``).

    A symlinked agent file (dotfiles) is written through the link, which stays a link. Any
    file-system failure is an :class:`AgentInstallError` naming the file and the fix.
    """
    path = Path(folder) / AGENT_FILE
    target = Path(os.path.realpath(path)) if path.is_symlink() else path
    wanted = shipped_definition()
    try:
        current = target.read_text("utf-8", errors="replace") if target.exists() else None
    except OSError as exc:
        raise AgentInstallError(
            f"cannot read {path} ({exc.strerror or exc}); fix its permissions or move it aside"
        ) from None
    if current is not None:
        if current == wanted:
            return AgentInstall(path, "unchanged")
        if not is_untouched(current) and not force:
            raise AgentFileModified(path)
        action = "updated" if is_untouched(current) else "overwritten"
    else:
        action = "installed"
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(wanted, "utf-8")
        tmp.replace(target)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise AgentInstallError(
            f"cannot write {path} ({exc.filename or target.parent}: {exc.strerror or exc}); "
            "nothing was changed. Fix: make that folder writable, or install with --user "
            "(or --project-dir) somewhere writable"
        ) from None
    return AgentInstall(path, action)
