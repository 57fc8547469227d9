"""Register our hooks in Claude Code's ``settings.json``: pure merge/unmerge plus a small I/O edge.

A hook is described by a :class:`HookSpec` (event, console script, module, timeout, matcher,
and the commands of earlier versions it replaces); :data:`DEFAULT_SPECS` lists what ``reflect
hook install`` registers. Adding a hook is one more ``HookSpec`` in that table.

Our handlers are recognised by their command, not by extra keys (Claude Code validates settings
and unknown keys are not ours to add): a ``command`` handler is ours when one of its shell words
has the spec's console-script name as its basename, or is ``-m <spec.module>``, or names a
script or module the spec replaces (``reflect-cadence-hook`` and ``reflect-escalation-hook``,
the two in-loop hooks earlier versions registered side by side, are ``reflect-in-loop-hook``'s
old names: installing replaces them, ``uninstall`` and ``status`` know them). Install first
removes every handler of ours for the event, then appends one fresh group — so running it twice
gives the same file — and never touches anyone else's handlers. Uninstall removes only ours,
and only the containers that removing ours emptied.

Settings shape (Claude Code docs): ``{"hooks": {"<Event>": [{"matcher": "...", "hooks":
[{"type": "command", "command": "...", "timeout": <seconds>}]}]}}``. ``Stop`` ignores matchers,
so none is written for it.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import shlex
import sys
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agent_reflection import config
from agent_reflection.errors import ReflectionError, json_error_message
from agent_reflection.hooks.in_loop import EVENTS, OPTIONS, PARTS, parse_args

#: Seconds Claude Code waits for the hook (its docs: timeouts are in seconds, default 600).
DEFAULT_TIMEOUT_SECONDS = 20
PROJECT_DIR_VAR = "$CLAUDE_PROJECT_DIR"


class InvalidSettingsFile(ReflectionError):
    """A Claude Code settings file that is not a JSON object of the documented shape."""


@dataclass(frozen=True)
class HookSpec:
    """One hook we register. ``script`` is the console script; ``module`` its ``-m`` form;
    ``replaces``, the (script, module) pairs of earlier versions' commands for the same job."""

    event: str
    script: str
    module: str
    timeout: int = DEFAULT_TIMEOUT_SECONDS
    matcher: str | None = None
    replaces: tuple[tuple[str, str], ...] = ()


STOP_HOOK = HookSpec("Stop", "reflect-stop-hook", "agent_reflection.hooks.stop")
#: Records the session's starting HEAD for the Stop hook's ``git.head_start`` (no matcher: every
#: source, startup / resume / clear / compact).
SESSION_START_HOOK = HookSpec(
    "SessionStart",
    "reflect-session-start-hook",
    "agent_reflection.hooks.session_start",
    timeout=10,
)
#: The capture: the Stop hook and the session-start record it reads (same ``--mode``).
CAPTURE_SPECS: tuple[HookSpec, ...] = (SESSION_START_HOOK, STOP_HOOK)
#: Checks the reflection agent's replies, blocks an invalid one once (matcher = the agent type).
SUBAGENT_STOP_HOOK = HookSpec(
    "SubagentStop",
    "reflect-subagent-stop-hook",
    "agent_reflection.hooks.subagent_stop",
    timeout=20,
    matcher="reflection-unblocker",
)
#: The commands earlier versions registered, one per part, for the same three events.
EARLIER_IN_LOOP_COMMANDS: dict[str, tuple[str, str]] = {
    "cadence": ("reflect-cadence-hook", "agent_reflection.hooks.cadence"),
    "escalation": ("reflect-escalation-hook", "agent_reflection.hooks.escalation"),
}
#: The cadence checkpoint and the anti-loop detector: one script for the three events (it
#: switches on ``hook_event_name``); a prompt starts a new task.
IN_LOOP_SPECS: tuple[HookSpec, ...] = tuple(
    HookSpec(
        event,
        "reflect-in-loop-hook",
        "agent_reflection.hooks.in_loop",
        timeout=10,
        replaces=tuple(EARLIER_IN_LOOP_COMMANDS.values()),
    )
    for event in EVENTS
)
#: Everything ``reflect hook install`` registers. Append here to ship a new hook.
DEFAULT_SPECS: tuple[HookSpec, ...] = (*CAPTURE_SPECS, *IN_LOOP_SPECS, SUBAGENT_STOP_HOOK)
#: Named parts for ``reflect hook install --only NAME``.
HOOK_PARTS: dict[str, tuple[HookSpec, ...]] = {
    "stop": CAPTURE_SPECS,
    "cadence": IN_LOOP_SPECS,
    "escalation": IN_LOOP_SPECS,
    "subagent": (SUBAGENT_STOP_HOOK,),
}


@dataclass(frozen=True)
class PlannedHook:
    """A spec with its resolved command line."""

    spec: HookSpec
    command: str

    def handler(self) -> dict[str, Any]:
        return {"type": "command", "command": self.command, "timeout": self.spec.timeout}


@dataclass(frozen=True)
class InstalledHook:
    event: str
    command: str
    timeout: object
    spec: HookSpec


# --- commands --------------------------------------------------------------------------------

#: Put before every hook command: CPython refuses to start when its stdin is a directory
#: (``init_sys_streams``, exit 1, before any hook code runs), so the shell Claude Code runs the
#: command in gives it an empty stdin instead; ``[`` is a shell builtin, so it costs no process.
STDIN_GUARD = "[ -d /dev/stdin ] && exec </dev/null; "


def hook_command(
    spec: HookSpec,
    *,
    project_dir: Path | None,
    bin_dir: Path | None = None,
    python: str | None = None,
    args: Sequence[str] = (),
    portable: bool = False,
    stdin_guard: bool = True,
) -> str:
    """The shell command Claude Code should run for ``spec``, after :data:`STDIN_GUARD` (git's
    hook scripts, which feed it stdin themselves, pass ``stdin_guard=False``).

    ``bin_dir`` (default: the folder of the running Python, i.e. the venv's ``bin``) holds the
    console script. When ``project_dir`` is given and the script lives inside it (a venv in
    the project), the command is ``"$CLAUDE_PROJECT_DIR"/<relative path>``: Claude Code runs
    hooks through a shell with that variable set to the project root, so a committed
    ``.claude/settings.json`` works in every clone that has its venv in the same place.

    Otherwise, with ``portable`` (the committable project ``settings.json``), it is the bare
    console-script name, found on ``PATH`` in each teammate's shell: an absolute path to this
    machine's venv would break every other clone. Without ``portable`` (``--local``, ``--user``:
    files that stay on this machine) it is the script's absolute path (quoted); the script's
    shebang names its venv's Python, so no activation is needed. Without the script (not
    installed as a console script), ``<python> -m <module>`` is used, or under ``portable`` the
    script name all the same (``reflect hook install`` warns when it is not on ``PATH``).
    """
    guard = STDIN_GUARD if stdin_guard else ""
    bin_dir = Path(sys.executable).parent if bin_dir is None else bin_dir
    script = bin_dir / spec.script
    extra = "".join(f" {shlex.quote(a)}" for a in args)
    if script.exists() and project_dir is not None:
        rel = _relative_inside(script, project_dir)
        if rel is not None:
            return f'{guard}"{PROJECT_DIR_VAR}"/{shlex.quote(rel)}{extra}'
    if portable:
        return f"{guard}{spec.script}{extra}"
    if not script.exists():
        return f"{guard}{shlex.quote(python or sys.executable)} -m {spec.module}{extra}"
    return f"{guard}{shlex.quote(str(script.absolute()))}{extra}"


def _relative_inside(path: Path, root: Path) -> str | None:
    # Do not resolve the script itself: a venv's bin entries may be symlinks to elsewhere.
    real_root = os.path.realpath(root)
    real_parent = os.path.realpath(path.absolute().parent)
    rel = os.path.relpath(os.path.join(real_parent, path.name), real_root)
    if rel.startswith(os.pardir):
        return None
    return rel.replace(os.sep, "/")


def is_ours(handler: object, spec: HookSpec) -> bool:
    """True when ``handler`` runs ``spec``'s console script or module, or one it replaces."""
    if not isinstance(handler, Mapping) or handler.get("type", "command") != "command":
        return False
    command = handler.get("command")
    if not isinstance(command, str):
        return False
    words = command_words(command)
    return any(_runs(words, *names) for names in ((spec.script, spec.module), *spec.replaces))


def command_words(command: str) -> list[str]:
    """The shell words of a hook command after :data:`STDIN_GUARD` (the program first)."""
    command = command.removeprefix(STDIN_GUARD)
    try:
        return shlex.split(command)
    except ValueError:
        return command.split()


def _runs(words: Sequence[str], script: str, module: str) -> bool:
    """True when the command's ``words`` run ``script`` or ``-m module``."""
    for i, word in enumerate(words):
        if os.path.basename(word) == script:
            return True
        if word == "-m" and i + 1 < len(words) and words[i + 1] == module:
            return True
    return False


def earlier_command(command: str) -> str | None:
    """The part an earlier version's in-loop command runs (``cadence``, ``escalation``), else
    ``None`` (``reflect hook status`` says that ``install`` replaces it)."""
    words = command_words(command)
    return next((p for p, names in EARLIER_IN_LOOP_COMMANDS.items() if _runs(words, *names)), None)


def in_loop_parts(settings: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    """The in-loop parts registered in ``settings``, by this version's command or an earlier
    one's, each with the option it was installed with (``("--reflection-cadence", "3")``, or
    ``()``): ``reflect hook install --only PART`` keeps the other part as it was."""
    found: dict[str, tuple[str, ...]] = {}
    for hook in installed_hooks(settings, IN_LOOP_SPECS):
        earlier = earlier_command(hook.command)
        args = parse_args(
            command_words(hook.command), (earlier,) if earlier else PARTS, lambda _: None
        )
        for part in args.parts:
            value = args.values.get(part)
            found.setdefault(part, () if value is None else (OPTIONS[part], value))
    return found


def in_loop_args(
    requested: Mapping[str, int | None], kept: Mapping[str, Sequence[str]] | None = None
) -> tuple[str, ...]:
    """The in-loop hook's arguments for the ``requested`` parts (part -> its option's value,
    ``None`` when not given) and the parts ``kept`` as installed (:func:`in_loop_parts`):
    ``--only`` for each part unless both run, then each part's option."""
    parts = {part: tuple(words) for part, words in (kept or {}).items()}
    for part, value in requested.items():
        parts[part] = () if value is None else (OPTIONS[part], str(value))
    only: tuple[str, ...] = ()
    if set(parts) != set(PARTS):
        only = tuple(w for p in PARTS if p in parts for w in ("--only", p))
    return only + tuple(w for p in PARTS if p in parts for w in parts[p])


# --- pure merge / unmerge --------------------------------------------------------------------


def install_hooks(settings: Mapping[str, Any], planned: Iterable[PlannedHook]) -> dict[str, Any]:
    """A copy of ``settings`` with each planned hook registered exactly once."""
    result = copy.deepcopy(dict(settings))
    hooks = result.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise InvalidSettingsFile("`hooks` must be an object of event names; fix or remove it")
    for plan in planned:
        event = plan.spec.event
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise InvalidSettingsFile(f"`hooks.{event}` must be an array of matcher groups; fix it")
        groups[:] = _without(groups, plan.spec)
        group: dict[str, Any] = {}
        if plan.spec.matcher is not None:
            group["matcher"] = plan.spec.matcher
        group["hooks"] = [plan.handler()]
        groups.append(group)
    return result


def uninstall_hooks(settings: Mapping[str, Any], specs: Iterable[HookSpec]) -> dict[str, Any]:
    """A copy of ``settings`` without our handlers (and the containers only they filled)."""
    result = copy.deepcopy(dict(settings))
    hooks = result.get("hooks")
    if not isinstance(hooks, dict):
        return result
    for spec in specs:
        groups = hooks.get(spec.event)
        if not isinstance(groups, list):
            continue
        kept = _without(groups, spec)
        if kept == groups:
            continue
        if kept:
            hooks[spec.event] = kept
        else:
            del hooks[spec.event]
    if not hooks and "hooks" in settings and settings["hooks"]:
        del result["hooks"]
    return result


def installed_hooks(settings: Mapping[str, Any], specs: Iterable[HookSpec]) -> list[InstalledHook]:
    """Our handlers currently registered, in file order."""
    hooks = settings.get("hooks")
    found: list[InstalledHook] = []
    if not isinstance(hooks, Mapping):
        return found
    for spec in specs:
        groups = hooks.get(spec.event)
        for group in groups if isinstance(groups, list) else []:
            handlers = group.get("hooks") if isinstance(group, Mapping) else None
            for handler in handlers if isinstance(handlers, list) else []:
                if is_ours(handler, spec):
                    found.append(
                        InstalledHook(spec.event, handler["command"], handler.get("timeout"), spec)
                    )
    return found


def _without(groups: list[Any], spec: HookSpec) -> list[Any]:
    kept: list[Any] = []
    for group in groups:
        handlers = group.get("hooks") if isinstance(group, Mapping) else None
        if not isinstance(handlers, list):
            kept.append(group)
            continue
        remaining = [h for h in handlers if not is_ours(h, spec)]
        if len(remaining) == len(handlers):
            kept.append(group)
        elif remaining:
            kept.append({**group, "hooks": remaining})
    return kept


# --- the file edge ---------------------------------------------------------------------------


def user_settings_path() -> Path:
    """``$CLAUDE_CONFIG_DIR/settings.json``, else ``~/.claude/settings.json``."""
    base = config.env_text(config.CLAUDE_CONFIG_DIR)
    return (
        Path(base).expanduser() / "settings.json"
        if base
        else Path.home() / ".claude" / "settings.json"
    )


def project_settings_path(project_dir: Path, *, local: bool = False) -> Path:
    """``<project>/.claude/settings.json``, or ``settings.local.json`` (not committed)."""
    return project_dir / ".claude" / ("settings.local.json" if local else "settings.json")


def backup_dir() -> Path:
    """Where settings backups go: ``$XDG_STATE_HOME/agent-reflection/settings-backups``.

    Outside every project (default ``~/.local/state/...``): a backup inside ``.claude/`` would
    show up as a changed file in the next sidecar, and in every ``git status``.
    """
    base = config.env_text(config.XDG_STATE_HOME) or str(Path.home() / ".local" / "state")
    return Path(base).expanduser() / "agent-reflection" / "settings-backups"


def read_settings(path: Path) -> dict[str, Any]:
    """The settings object; ``{}`` when the file is missing or empty."""
    try:
        text = path.read_text("utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidSettingsFile(
            f"{path}: cannot read it ({exc.strerror if isinstance(exc, OSError) else exc}); "
            "nothing was changed. Fix: make it a readable JSON file, or move it aside"
        ) from None
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidSettingsFile(
            f"{path}: line {exc.lineno} column {exc.colno}: not valid JSON "
            f"({json_error_message(exc)}); "
            "fix it (or move it aside) and run the command again — nothing was changed"
        ) from None
    if not isinstance(data, dict):
        raise InvalidSettingsFile(f"{path}: must hold a JSON object; nothing was changed")
    return data


@dataclass(frozen=True)
class SettingsChange:
    path: Path
    changed: bool
    backup: Path | None
    before: tuple[InstalledHook, ...]
    after: tuple[InstalledHook, ...]


class SettingsWriteError(ReflectionError):
    """The settings file (or its backup) could not be written; the message says how to fix it."""


def write_settings(path: Path, data: Mapping[str, Any]) -> Path | None:
    """Write ``data`` atomically (temp file + fsync + rename), backing up the old file first.

    A symlinked settings file (dotfiles) is written through the link: the link stays a link
    and its target gets the new content. The backup goes to :func:`backup_dir`, outside the
    project; the ten newest per settings file are kept.
    Returns the backup path, or None when there was no file. Any failure is a
    :class:`SettingsWriteError` naming the file and the fix; the old file is then unchanged.
    """
    target = Path(os.path.realpath(path)) if path.is_symlink() else path
    backup = None
    mode = 0o644
    if target.exists():
        backup = _back_up(path, target, backup_dir(), datetime.now(UTC))
        mode = target.stat().st_mode & 0o777
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as exc:
        raise SettingsWriteError(_cannot_write(path, target.parent, exc)) from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise SettingsWriteError(_cannot_write(path, target, exc)) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return backup


def _cannot_write(path: Path, where: Path, exc: OSError) -> str:
    reason = exc.strerror or str(exc)
    return (
        f"cannot write {path} ({where}: {reason}); nothing was changed. Fix: make {where} "
        "writable, or install into another settings file (--local or --user)"
    )


#: Backups kept per settings file (older ones are removed when a new one is made).
KEEP_BACKUPS = 10


def _back_up(path: Path, target: Path, folder: Path, now: datetime) -> Path:
    """Copy ``target`` to ``folder/<project>.<file>.<path hash>.<UTC stamp>.bak``; keep ten."""
    digest = hashlib.sha256(os.fsencode(path.absolute())).hexdigest()[:12]
    prefix = f"{path.parent.parent.name or 'root'}.{path.name}.{digest}."
    stamp = now.strftime("%Y%m%dT%H%M%S.%fZ")
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        backup = folder / f"{prefix}{stamp}.bak"
        n = 1
        while backup.exists():
            backup = folder / f"{prefix}{stamp}-{n}.bak"
            n += 1
        backup.write_bytes(target.read_bytes())
    except OSError as exc:
        raise SettingsWriteError(
            f"cannot back up {path} into {folder} ({exc.strerror or exc}); nothing was changed. "
            "Fix: set XDG_STATE_HOME to a writable folder"
        ) from None
    old = sorted(p for p in folder.iterdir() if p.name.startswith(prefix))[:-KEEP_BACKUPS]
    for stale in old:
        stale.unlink(missing_ok=True)
    return backup


def apply(
    path: Path, edit: Callable[[dict[str, Any]], dict[str, Any]], specs: Sequence[HookSpec]
) -> SettingsChange:
    """Read ``path``, apply ``edit(settings) -> settings``, write only if something changed."""
    before = read_settings(path)
    after = edit(before)
    changed = after != before or (not path.exists() and bool(after))
    backup = write_settings(path, after) if changed else None
    return SettingsChange(
        path,
        changed,
        backup,
        tuple(installed_hooks(before, specs)),
        tuple(installed_hooks(after, specs)),
    )


def install(path: Path, planned: Sequence[PlannedHook]) -> SettingsChange:
    """Register ``planned`` in the settings file at ``path`` (idempotent, with a backup)."""
    return apply(path, lambda s: install_hooks(s, planned), [p.spec for p in planned])


def uninstall(path: Path, specs: Sequence[HookSpec] = DEFAULT_SPECS) -> SettingsChange:
    """Remove our handlers for ``specs`` from the settings file at ``path`` (a missing file
    stays missing: nothing changes)."""
    return apply(path, lambda s: uninstall_hooks(s, specs), specs)
