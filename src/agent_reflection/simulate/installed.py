"""Sessions through the hooks ``reflect hook install`` registered, as Claude Code runs them.

:func:`run_installed_hooks` reads the project's settings files and runs each command registered
for an event through a shell, in the project, with ``CLAUDE_PROJECT_DIR`` set and the event
JSON on stdin: what Claude Code does. :func:`simulate_installed_session` plays one session on a
real repository: SessionStart, an agent's edit, the agent's self-report as the project's
CLAUDE.md block asks for it (:func:`follow_block`, which reads the block as an agent would:
the file it names and the shape of its example), then Stop. It returns the sidecar the Stop
hook wrote, so a test or a measurement can count the degraded ones.
"""

from __future__ import annotations

import json
import random
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_reflection.hooks.instructions import (
    BEGIN,
    END,
    LOCAL_MEMORY_FILES,
    PROJECT_MEMORY_FILES,
)
from agent_reflection.hooks.settings import project_settings_path, read_settings
from agent_reflection.simulate.session import SimulationFailed, write_files

#: How a simulated agent treats the self-report request: writes it as asked, writes nothing,
#: or writes something of the wrong shape.
BEHAVIOURS = ("follows", "ignores", "wrong-shape")


@dataclass(frozen=True)
class HookRun:
    """One registered command run for one event: its command line, exit code and output."""

    command: str
    returncode: int
    stdout: str
    stderr: str


@dataclass(frozen=True)
class InstalledSession:
    """What one simulated session left: the sidecars the Stop hook wrote during it, the hook
    runs, and the self-report file the agent wrote (None: it wrote none)."""

    session_id: str
    sidecars: tuple[Path, ...]
    runs: tuple[HookRun, ...]
    self_report_path: Path | None


def registered_commands(project: Path, event: str) -> list[str]:
    """The commands registered for ``event`` in the project's ``.claude/settings.json`` and
    ``settings.local.json``, in that order (Claude Code runs them all)."""
    commands: list[str] = []
    for local in (False, True):
        settings = read_settings(project_settings_path(project, local=local))
        groups = settings.get("hooks", {}).get(event, [])
        for group in groups if isinstance(groups, list) else []:
            for handler in group.get("hooks", []) if isinstance(group, dict) else []:
                if isinstance(handler, dict) and isinstance(handler.get("command"), str):
                    commands.append(handler["command"])
    return commands


def run_installed_hooks(
    project: Path, event: Mapping[str, Any], env: Mapping[str, str]
) -> list[HookRun]:
    """Run every command registered for ``event["hook_event_name"]`` as Claude Code does: by
    ``sh -c`` in ``project``, ``CLAUDE_PROJECT_DIR`` set, the event JSON on stdin."""
    runs = []
    for command in registered_commands(project, str(event["hook_event_name"])):
        done = subprocess.run(
            ["sh", "-c", command],
            input=json.dumps(event),
            cwd=project,
            env={**env, "CLAUDE_PROJECT_DIR": str(project)},
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        runs.append(HookRun(command, done.returncode, done.stdout, done.stderr))
    return runs


def read_block(project: Path) -> str | None:
    """The self-report block of the project's memory files (what Claude Code loads into the
    session), else None."""
    for name in (*PROJECT_MEMORY_FILES, *LOCAL_MEMORY_FILES):
        path = project / name
        if not path.is_file():
            continue
        text = path.read_text("utf-8")
        if BEGIN in text and END in text:
            return text[text.index(BEGIN) : text.index(END) + len(END)]
    return None


def follow_block(block: str, rng: random.Random) -> tuple[str, dict[str, Any]]:
    """What an agent that follows ``block`` writes, and where: the first backticked ``.json``
    path the block names, and a report of its example's shape with the agent's own values."""
    head, fence, rest = block.partition("```json\n")
    example, closed, _ = rest.partition("\n```")
    spans = head.split("`")[1::2]  # the backticked words, as a reader sees them
    paths = [w for w in spans if w.endswith(".json") and not any(c.isspace() for c in w)]
    if not paths or not fence or not closed:
        raise SimulationFailed("the self-report block names no .json file or has no example")
    return paths[0], fill_report(json.loads(example), rng)


def fill_report(shape: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """A self-report with the keys of ``shape`` (an example or a template) and the agent's own
    values."""
    report = dict(shape)
    if "confidence" in report:
        report["confidence"] = round(rng.uniform(0.3, 0.95), 2)
    if isinstance(report.get("most_likely_wrong"), dict):
        report["most_likely_wrong"] = {
            "surface": rng.choice(["data", "test", "docs", "none"]),
            "description": "the edge case of an empty input is not covered",
        }
    if "known_not_in_diff" in report:
        report["known_not_in_diff"] = "ran the test suite locally; not run in CI yet"
    return report


def simulate_installed_session(
    project: Path,
    session_id: str,
    *,
    edits: Mapping[str, str],
    env: Mapping[str, str],
    behaviour: str = "follows",
    rng: random.Random | None = None,
    transcripts: Path | None = None,
) -> InstalledSession:
    """One session in ``project`` through its installed hooks: SessionStart, the agent's
    ``edits`` (path -> text, left uncommitted), its self-report as ``behaviour`` says
    (:data:`BEHAVIOURS`; ``follows`` does what the CLAUDE.md block asks, else nothing), Stop —
    answering an ask-mode block once, as Claude would. Every hook must exit 0."""
    if behaviour not in BEHAVIOURS:
        raise ValueError(f"behaviour must be one of {BEHAVIOURS}, got {behaviour!r}")
    rng = rng or random.Random(0)
    where = transcripts or project
    base = {
        "session_id": session_id,
        "transcript_path": str(where / f"{session_id}.jsonl"),
        "cwd": str(project),
        "permission_mode": "default",
    }
    runs = run_installed_hooks(
        project, {**base, "hook_event_name": "SessionStart", "source": "startup"}, env
    )
    before = _sidecars(project)
    write_files(project, edits)
    written: Path | None = None
    block = read_block(project)
    if behaviour == "follows" and block is not None:
        rel, report = follow_block(block, rng)
        written = project / rel
        write_files(project, {rel: json.dumps(report, indent=2) + "\n"})
    elif behaviour == "wrong-shape":
        written = project / ".reflection" / "input.json"
        write_files(project, {".reflection/input.json": '{"confidence": "very high"}\n'})
    stop = {**base, "hook_event_name": "Stop", "stop_hook_active": False}
    stop_runs = run_installed_hooks(project, stop, env)
    asked = [r for r in stop_runs if r.stdout.strip()]
    if asked and behaviour == "follows":  # ask mode: the agent answers in the asked shape
        reason = str(json.loads(asked[0].stdout)["reason"])
        named = reason.partition("JSON to ")[2].partition(" answering")[0]
        shape = reason.partition("Shape: ")[2].rpartition(" (confidence")[0]
        if not named or not shape:
            raise SimulationFailed(f"the ask names no file or shape: {reason}")
        written = Path(named)
        written.parent.mkdir(parents=True, exist_ok=True)
        answer = fill_report(json.loads(shape), rng)
        written.write_text(json.dumps(answer) + "\n", "utf-8")
    if asked:
        stop_runs += run_installed_hooks(project, {**stop, "stop_hook_active": True}, env)
    runs += stop_runs
    bad = [r for r in runs if r.returncode != 0]
    if bad:
        raise SimulationFailed(f"{bad[0].command} exited {bad[0].returncode}: {bad[0].stderr}")
    after = _sidecars(project)
    return InstalledSession(session_id, tuple(sorted(after - before)), tuple(runs), written)


def _sidecars(project: Path) -> set[Path]:
    return set((project / ".reflection" / "sidecars").glob("*.reflection.json"))


def count_degraded(paths: Sequence[Path]) -> tuple[int, int]:
    """``(degraded, total)`` over the sidecars at ``paths``."""
    records = [json.loads(p.read_text("utf-8")) for p in paths]
    return sum(1 for r in records if r["provenance"]["degraded"]), len(records)
