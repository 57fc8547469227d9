"""``reflect hook install | uninstall | status``: register the Stop hook in Claude Code settings
(and, with ``--git``, the repository's post-commit hook that writes ``refs/notes/reflection``)."""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from dataclasses import replace
from functools import partial
from pathlib import Path

import click

from agent_reflection import config
from agent_reflection.cli._groups import hook_group
from agent_reflection.errors import ReflectionError
from agent_reflection.hooks.git_hooks import (
    git_hook_status,
    install_git_hooks,
    uninstall_git_hooks,
)
from agent_reflection.hooks.gitstate import GitFailed, git
from agent_reflection.hooks.settings import (
    CAPTURE_SPECS,
    DEFAULT_SPECS,
    DEFAULT_TIMEOUT_SECONDS,
    HOOK_PARTS,
    IN_LOOP_SPECS,
    STOP_HOOK,
    HookSpec,
    PlannedHook,
    SettingsChange,
    earlier_command,
    hook_command,
    in_loop_args,
    in_loop_parts,
    install,
    installed_hooks,
    project_settings_path,
    read_settings,
    uninstall,
    user_settings_path,
)

RESTART_NOTE = (
    "Note: Claude Code snapshots hooks when a session starts. Running sessions pick this change "
    "up only after you review it in /hooks, or after a restart."
)


def _scope_options(func: click.decorators.FC, verb: str = "Edit") -> click.decorators.FC:
    """--project/--local/--user/--project-dir for commands that edit (or, ``verb="Read"``,
    read: ``hook status``) the settings file."""
    lower = verb.lower()
    func = click.option(
        "--project-dir",
        type=click.Path(file_okay=False, path_type=Path),
        default=None,
        help=f"Project whose .claude/settings.json to {lower} (default: the git root of the "
        "current folder, else the current folder).",
    )(func)
    func = click.option(
        "--user",
        "scope",
        flag_value="user",
        help=f"{verb} your user ~/.claude/settings.json ($CLAUDE_CONFIG_DIR/settings.json when "
        "set); commands use this machine's absolute paths.",
    )(func)
    func = click.option(
        "--local",
        "scope",
        flag_value="local",
        help=f"{verb} the project's .claude/settings.local.json (yours only, not committed); "
        "commands use this machine's absolute paths.",
    )(func)
    return click.option(
        "--project",
        "scope",
        flag_value="project",
        default=True,
        help=f"{verb} the project's .claude/settings.json (default; committed and shared, so its "
        "commands are portable: $CLAUDE_PROJECT_DIR or the command name on PATH).",
    )(func)


def _project_dir(given: Path | None) -> Path:
    if given is not None:
        return given.absolute()
    try:
        return Path(os.fsdecode(git(["rev-parse", "--show-toplevel"], os.getcwd())).strip())
    except GitFailed:
        return Path.cwd()


def _settings_path(scope: str, project_dir: Path | None) -> tuple[Path, Path | None]:
    if scope == "user":
        return user_settings_path(), None
    root = _project_dir(project_dir)
    return project_settings_path(root, local=scope == "local"), root


def _is_git_ignored(root: Path, path: Path) -> bool | None:
    """Whether git ignores the untracked file ``path`` in ``root`` (None: not a repository, or
    git unusable)."""
    try:
        out = git(
            ["ls-files", "--others", "--ignored", "--exclude-standard", "--", str(path)], str(root)
        )
    except GitFailed:
        return None
    return bool(out.strip())


def _echo_backup(backup: Path | None) -> None:
    if backup is not None:
        click.echo(f"  backup of the previous file (outside the project): {backup}")


def _report(change: SettingsChange, verb: str) -> None:
    if not change.changed:
        click.echo(f"{change.path}: already up to date, nothing changed.")
        return
    click.echo(f"{verb} {change.path}")
    _echo_backup(change.backup)
    for hook in change.after:
        click.echo(f"  {hook.event}: {hook.command}  (timeout {hook.timeout}s)")


_git_option = click.option(
    "--git",
    is_flag=True,
    help="The git repository's post-commit/post-rewrite hooks (refs/notes/reflection) "
    "instead of Claude Code settings; --project-dir names the repository.",
)


NOTES_HINT = (
    "Share the notes with `git push origin refs/notes/reflection`; fetch them with "
    "`git fetch origin refs/notes/reflection:refs/notes/reflection`. Keep them across amend and "
    "rebase with `git config notes.rewriteRef refs/notes/reflection` (docs/capture.md)."
)


def _install_git(project_dir: Path | None) -> None:
    repo = (project_dir or Path.cwd()).absolute()
    spec = HookSpec("post-commit", "reflect-post-commit-hook", "agent_reflection.hooks.post_commit")
    changes = install_git_hooks(repo, hook_command(spec, project_dir=None))
    click.echo(f"git hooks for {repo}:")
    for change in changes:
        kept = f" (runs the earlier hook {change.chained} first)" if change.chained else ""
        click.echo(f"  {change.name}: {change.action} {change.path}{kept}")
    click.echo(NOTES_HINT)


def _uninstall_git(project_dir: Path | None) -> None:
    repo = (project_dir or Path.cwd()).absolute()
    changes = uninstall_git_hooks(repo)
    if all(c.action == "absent" for c in changes):
        click.echo(f"{repo}: no reflection git hook installed, nothing changed.")
        return
    click.echo(f"git hooks for {repo}:")
    for change in changes:
        restored = f" (restored the earlier hook at {change.chained})" if change.chained else ""
        click.echo(f"  {change.name}: {change.action} {change.path}{restored}")


@hook_group.command("install")
@_scope_options
@click.option(
    "--mode",
    type=click.Choice(["solo", "orchestrated", "env"]),
    default=None,
    help="Capture mode the hook uses when REFLECTION_MODE is unset. 'env' = capture only when "
    "the session sets REFLECTION_MODE (fail-closed). Default: solo for --project, env for --user.",
)
@click.option(
    "--timeout",
    type=click.IntRange(1, 600),
    default=DEFAULT_TIMEOUT_SECONDS,
    show_default=True,
    help="Seconds Claude Code waits for the Stop hook before giving up (the in-loop hooks use "
    "10 s, the SubagentStop check 20 s).",
)
@click.option(
    "--reflection-cadence",
    type=click.IntRange(min=0),
    default=None,
    help="Checkpoint every N tool calls (0 disables), written into the in-loop hook's command. "
    "Default: the project's config ($REFLECTION_CADENCE, .agent-reflection.toml, "
    "[tool.agent-reflection]), else 7.",
)
@click.option(
    "--escalation-threshold",
    type=click.IntRange(min=0),
    default=None,
    help="Escalate after N failures of the same kind (0 disables), written into the "
    "in-loop hook's command. Default: $REFLECTION_ESCALATION_THRESHOLD, else 4. Below 4 the "
    "reflection agent refuses the block as misrouted (its contract starts at attempt 4).",
)
@click.option(
    "--only",
    "parts",
    multiple=True,
    type=click.Choice(sorted(HOOK_PARTS)),
    help="Install only these parts (repeatable): stop = the capture hook, cadence = the "
    "checkpoint, escalation = the anti-loop detector (these two are one in-loop hook; a part "
    "already installed is kept), subagent = the reflection agent's check. Default: all four.",
)
@_git_option
def install_command(
    scope: str,
    project_dir: Path | None,
    mode: str | None,
    timeout: int,
    reflection_cadence: int | None,
    escalation_threshold: int | None,
    parts: tuple[str, ...],
    git: bool,
) -> None:
    """Add the reflection hooks (Stop capture, cadence checkpoint, anti-loop escalation,
    SubagentStop check) to settings.

    Merges with the hooks already there (nothing of anyone else's is changed), is idempotent
    (running it twice changes nothing), and keeps a timestamped backup of the previous file
    outside the project ($XDG_STATE_HOME/agent-reflection/settings-backups). A symlinked
    settings file is edited through the link.

    The project's settings.json is committed, so its commands must work in a teammate's
    clone: "$CLAUDE_PROJECT_DIR"/<path> for a venv inside the project, else the bare command
    name (each teammate needs it on PATH). --local and --user files stay on this machine and
    get absolute paths.

    \b
    Examples:
      reflect hook install                 # this project, all four groups (capture: solo)
      reflect hook install --user          # every project; captures only when the session
                                           # sets REFLECTION_MODE=solo|orchestrated
      reflect hook install --local         # this project, just you (settings.local.json)
      reflect hook install --mode orchestrated --timeout 30
      reflect hook install --reflection-cadence 10   # checkpoint every 10 tool calls
      reflect hook install --escalation-threshold 5  # escalate after 5 same failures
      reflect hook install --only stop     # just the capture hooks (Stop, SessionStart)
      reflect hook install --git           # this repository's post-commit note hook

    \b
    Also registers reflect-session-start-hook (SessionStart: the session's starting HEAD, for
    the sidecar's git facts), reflect-in-loop-hook (PostToolUse, PostToolUseFailure and
    UserPromptSubmit: the cadence checkpoint and the anti-loop detector in one process per
    event; it replaces the reflect-cadence-hook and reflect-escalation-hook commands of
    earlier versions) and reflect-subagent-stop-hook (SubagentStop, matcher
    reflection-unblocker: checks the reflection agent's replies, blocks an invalid one once).

    With --git, installs instead the repository's post-commit and post-rewrite hooks (in
    core.hooksPath when set, else .git/hooks; a hook already there is kept and run first):
    each commit gets a note in refs/notes/reflection with the sessions whose uncommitted work
    it contains. See docs/capture.md for sharing the notes.
    """
    if git:
        _install_git(project_dir)
        return
    path, root = _settings_path(scope, project_dir)
    project = scope != "user"
    portable = scope == "project"
    mode = mode or ("solo" if project else "env")
    args = () if mode == "env" else ("--mode", mode)
    wanted = {spec for part in parts for spec in HOOK_PARTS[part]} or set(DEFAULT_SPECS)
    values = {"cadence": reflection_cadence, "escalation": escalation_threshold}
    requested = {part: value for part, value in values.items() if part in parts or not parts}
    kept = in_loop_parts(read_settings(path)) if parts else {}  # --only: the other part stays
    planned = []
    for spec in (s for s in DEFAULT_SPECS if s in wanted):
        spec_args: tuple[str, ...] = ()
        if spec in IN_LOOP_SPECS:
            spec_args = in_loop_args(requested, kept)
        elif spec == STOP_HOOK:
            spec, spec_args = replace(spec, timeout=timeout), args
        elif spec in CAPTURE_SPECS:
            spec_args = args
        command = hook_command(spec, project_dir=root, args=spec_args, portable=portable)
        planned.append(PlannedHook(spec, command))
    change = install(path, planned)
    _report(change, "Installed the hook in")
    missing = sorted({p.spec.script for p in planned if p.command.split(" ")[0] == p.spec.script})
    for script in missing:
        if shutil.which(script) is None:
            click.echo(
                f"warning: {script} is not on PATH here, so Claude Code cannot run it. Fix: put "
                f"{Path(sys.executable).parent} on PATH, or install with --local (this machine's "
                "absolute path, not committed)."
            )
    if scope == "local" and root is not None and _is_git_ignored(root, path) is False:
        click.echo(
            f"warning: {path} is not git-ignored here; add `.claude/settings.local.json` to "
            ".gitignore so this machine's paths are not committed."
        )
    if mode == "env":
        click.echo(
            "The hook captures only in sessions started with REFLECTION_MODE=solo (or "
            "orchestrated) in their environment; otherwise it does nothing."
        )
    click.echo(RESTART_NOTE)


@hook_group.command("uninstall")
@_scope_options
@_git_option
def uninstall_command(scope: str, project_dir: Path | None, git: bool) -> None:
    """Remove the hooks `reflect hook install` added, and nothing else.

    \b
    Examples:
      reflect hook uninstall
      reflect hook uninstall --user
      reflect hook uninstall --local
      reflect hook uninstall --git         # the repository's post-commit note hook

    With --git, removes our post-commit and post-rewrite hooks and puts back the hooks they
    were running first. Notes already written stay in refs/notes/reflection.
    """
    if git:
        _uninstall_git(project_dir)
        return
    path, _ = _settings_path(scope, project_dir)
    change = uninstall(path, DEFAULT_SPECS)
    if not change.changed:
        click.echo(f"{path}: no reflection hook registered, nothing changed.")
        return
    click.echo(f"Removed {len(change.before)} reflection hook(s) from {path}")
    _echo_backup(change.backup)
    click.echo(RESTART_NOTE)


@hook_group.command("status")
@partial(_scope_options, verb="Read")
def status_command(scope: str, project_dir: Path | None) -> None:
    """Show whether the reflection hooks are registered and whether they would capture.

    \b
    Examples:
      reflect hook status
      reflect hook status --user
    """
    path, root = _settings_path(scope, project_dir)
    hooks = installed_hooks(read_settings(path), DEFAULT_SPECS)
    if not hooks:
        click.echo(f"{path}: not installed (run `reflect hook install`).")
    for hook in hooks:
        click.echo(f"{path}: {hook.event} -> {hook.command} (timeout {hook.timeout}s)")
        part = earlier_command(hook.command)
        if part is not None:
            click.echo(
                f"  note: an earlier version's {part} hook; `reflect hook install` replaces it "
                "with reflect-in-loop-hook (both parts in one process per tool call)"
            )
        words = shlex.split(hook.command.replace('"$CLAUDE_PROJECT_DIR"', str(root or "")))
        exe = words[0] if words else ""
        if exe and shutil.which(exe) is None:
            click.echo(f"  warning: {exe} is not an executable file (or on PATH) here")
    mode = os.environ.get(config.MODE.env)  # as set: empty is off, not unset
    click.echo(f"{config.MODE.env} in this shell: {mode if mode is not None else '(unset)'}")
    if scope != "user":
        try:
            found = git_hook_status(_project_dir(project_dir))
        except ReflectionError:
            return
        for name, hook_path, ours in found:
            state = "installed" if ours else "not installed (reflect hook install --git)"
            click.echo(f"git {name} hook: {state} at {hook_path}")
