"""``reflect hook install | uninstall | status``: register the Stop hook in Claude Code settings
(and, with ``--git``, the repository's post-commit hook that writes ``refs/notes/reflection``)."""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import replace
from functools import partial
from pathlib import Path

import click

from agent_reflection import config
from agent_reflection.cli._groups import hook_group
from agent_reflection.errors import ReflectionError
from agent_reflection.hooks.bytecode import compile_package, not_compiled_hint
from agent_reflection.hooks.git_hooks import (
    git_hook_status,
    install_git_hooks,
    uninstall_git_hooks,
)
from agent_reflection.hooks.gitstate import GitFailed, git
from agent_reflection.hooks.instructions import (
    LOCAL_MEMORY_FILES,
    PROJECT_MEMORY_FILES,
    has_block,
    install_block,
    uninstall_block,
)
from agent_reflection.hooks.settings import (
    CAPTURE_SPECS,
    DEFAULT_SPECS,
    DEFAULT_TIMEOUT_SECONDS,
    HOOK_PARTS,
    IN_LOOP_SPECS,
    STOP_HOOK,
    HookSpec,
    InstalledHook,
    PlannedHook,
    SettingsChange,
    command_words,
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
from agent_reflection.hooks.workspace import (
    exclude_file,
    exclude_generated,
    generated_patterns,
    ignored_by,
    mark_workspace,
)

#: ``--self-report`` choices: how the agent is asked for its self-report.
SELF_REPORT_WAYS = ("claude-md", "ask", "both", "none")

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
    changes = install_git_hooks(repo, hook_command(spec, project_dir=None, stdin_guard=False))
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
@click.option(
    "--self-report",
    "self_report",
    type=click.Choice(SELF_REPORT_WAYS),
    default=None,
    help="How the agent is asked for its self-report (the file the Stop hook reads): "
    "'claude-md' = a marked block in the project's CLAUDE.md (CLAUDE.local.md with --local), "
    "loaded into every session; 'ask' = the Stop hook asks once when a stop has none (one "
    "more turn); 'both'; 'none'. Default: claude-md, ask for --user. See docs/capture.md.",
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
    self_report: str | None,
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
      reflect hook install --self-report ask   # no CLAUDE.md block; the hook asks once
      reflect hook install --git           # this repository's post-commit note hook

    \b
    Self-report (what P1 needs from each session): by default a marked block in the project's
    CLAUDE.md (CLAUDE.local.md with --local) tells the agent to write .reflection/input.json
    before it stops; the block is replaced on reinstall and removed by uninstall, the rest of
    the file untouched. --self-report ask makes the Stop hook ask once instead (the default
    with --user); --self-report both does both.

    \b
    The repository stays clean: install marks the project as the workspace
    (.agent-reflection.toml: database and reports under .reflection/, found from any folder
    below it), adds /.reflection/ to .git/info/exclude (sidecars can hold secrets), lists the
    files to commit, and warns when git ignores one of them (--local keeps all of it yours).

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

    Either way the package's bytecode is written (where it is missing), so no hook call
    compiles its modules first, as Python does on every import where PYTHONDONTWRITEBYTECODE
    is set and an editable install wrote none.
    """
    if git:
        _compile_package()
        _install_git(project_dir)
        return
    path, root = _settings_path(scope, project_dir)
    project = scope != "user"
    portable = scope == "project"
    mode = mode or ("solo" if project else "env")
    args = () if mode == "env" else ("--mode", mode)
    wanted = {spec for part in parts for spec in HOOK_PARTS[part]} or set(DEFAULT_SPECS)
    way = self_report or ("claude-md" if project else "ask")
    if way in ("claude-md", "both") and root is None:
        raise click.UsageError(
            "--user with --self-report claude-md: a block in your user CLAUDE.md would make "
            "agents in every project write a self-report file, captured or not. Use "
            "--self-report ask (asks only in sessions that capture), or install the block per "
            "project: `reflect hook install --only stop` in that project."
        )
    _compile_package()
    values = {"cadence": reflection_cadence, "escalation": escalation_threshold}
    requested = {part: value for part, value in values.items() if part in parts or not parts}
    kept = in_loop_parts(read_settings(path)) if parts else {}  # --only: the other part stays
    planned = []
    for spec in (s for s in DEFAULT_SPECS if s in wanted):
        spec_args: tuple[str, ...] = ()
        if spec in IN_LOOP_SPECS:
            spec_args = in_loop_args(requested, kept)
        elif spec == STOP_HOOK:
            ask = ("--ask",) if way in ("ask", "both") else ()
            spec, spec_args = replace(spec, timeout=timeout), (*args, *ask)
        elif spec in CAPTURE_SPECS:
            spec_args = args
        command = hook_command(spec, project_dir=root, args=spec_args, portable=portable)
        planned.append(PlannedHook(spec, command))
    change = install(path, planned)
    _report(change, "Installed the hook in")
    missing = sorted(
        {p.spec.script for p in planned if command_words(p.command)[0] == p.spec.script}
    )
    for script in missing:
        if shutil.which(script) is None:
            click.echo(
                f"warning: {script} is not on PATH here, so Claude Code cannot run it. Fix: put "
                f"{Path(sys.executable).parent} on PATH, or install with --local (this machine's "
                "absolute path, not committed)."
            )
    if mode == "env":
        click.echo(
            "The hook captures only in sessions started with REFLECTION_MODE=solo (or "
            "orchestrated) in their environment; otherwise it does nothing."
        )
    written = [path]
    if STOP_HOOK in wanted:  # else no capture is installed: nothing reads a self-report
        written += _report_self_report(way, scope, root)
    if root is not None:
        _keep_repository_clean(scope, root, written)
    click.echo(RESTART_NOTE)


def _compile_package() -> None:
    """The package's bytecode for the hooks to read (:mod:`agent_reflection.hooks.bytecode`);
    a note, never a failure, when it cannot be written."""
    if not compile_package():
        click.echo(not_compiled_hint(), err=True)


def _keep_repository_clean(scope: str, root: Path, written: list[Path]) -> None:
    """Mark ``root`` as the workspace, keep what it generates out of commits, and say which
    files the install wrote are to be committed (warning when git ignores one of them).
    Outside a git repository nothing is marked: the Stop hook captures only inside one."""
    try:
        exclude_file(str(root))
    except GitFailed:
        click.echo(f"{root} is not a git repository: no workspace marked, nothing excluded.")
        return
    marker = mark_workspace(str(root))
    if marker is not None:
        click.echo(
            f"Marked {root} as the workspace: wrote {marker} (`reflect` commands and notebooks "
            "run below it use its database and reports, under .reflection/)."
        )
        written.append(Path(marker))
    extra = []
    if scope == "local":  # this machine's files: none of them is shared
        extra = [str(p.relative_to(root)) for p in written if p.is_relative_to(root)]
    exclude, added = exclude_generated(str(root), generated_patterns(str(root), extra))
    if added:
        click.echo(
            f"Kept generated files out of commits: added {', '.join(added)} to {exclude} "
            "(sidecars and self-reports can hold secrets; `git add -A` will not take them)."
        )
    if scope != "project":
        return
    shared = [p for p in dict.fromkeys(written) if p.exists() and p.is_relative_to(root)]
    for file in shared:
        rule = ignored_by(str(root), str(file))
        if rule is not None:
            rel = file.relative_to(root)
            click.echo(
                f"warning: {rel} is ignored by git here ({rule}), so teammates will not get it. "
                f"Share it with `git add -f {rel}`, or reinstall with --local to keep the "
                "install yours (settings.local.json, CLAUDE.local.md; nothing to commit)."
            )
    names = ", ".join(str(p.relative_to(root)) for p in shared)
    click.echo(f"To commit (shared with the team): {names}.")


def _memory_files(scope: str) -> tuple[str, ...]:
    return LOCAL_MEMORY_FILES if scope == "local" else PROJECT_MEMORY_FILES


def _input_path() -> str:
    """The self-report file the block names, relative to the repository root."""
    from agent_reflection.hooks.capture import DEFAULT_INPUT

    return (config.env_text(config.INPUT) or DEFAULT_INPUT).replace(os.sep, "/")


def _report_self_report(way: str, scope: str, root: Path | None) -> list[Path]:
    """Add or remove the memory-file block as ``way`` says, and say what asks for the
    self-report; the memory file that holds the block, if any."""
    files = _memory_files(scope)
    holding: list[Path] = []
    if root is not None and way in ("claude-md", "both"):
        change = install_block(str(root), files, _input_path())
        holding.append(Path(change.path))
        said = {"added": "Added", "updated": "Updated"}.get(change.action)
        if said:
            click.echo(
                f"{said} the self-report block in {change.path}: each session's agent writes "
                f"{_input_path()} before it stops (`reflect hook uninstall` removes the block)."
            )
        else:
            click.echo(f"{change.path}: the self-report block is already there.")
    elif root is not None:
        for change in uninstall_block(str(root), files):
            if change.action != "absent":
                click.echo(f"Removed the self-report block from {change.path} ({change.action}).")
    if way in ("ask", "both"):
        click.echo(
            "Ask mode: a stop without a usable self-report makes the Stop hook ask the agent "
            "once (one more turn)."
        )
    if way == "none":
        click.echo(
            "Nothing asks the agent for a self-report: sidecars will have confidence null and "
            "P1 nothing to count (reinstall with --self-report claude-md or ask)."
        )
    return holding


@hook_group.command("uninstall")
@_scope_options
@_git_option
def uninstall_command(scope: str, project_dir: Path | None, git: bool) -> None:
    """Remove the hooks `reflect hook install` added, and its self-report block from
    CLAUDE.md (CLAUDE.local.md with --local), and nothing else.

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
    path, root = _settings_path(scope, project_dir)
    change = uninstall(path, DEFAULT_SPECS)
    blocks = [] if root is None else uninstall_block(str(root), _memory_files(scope))
    for block in blocks:
        if block.action != "absent":
            click.echo(f"Removed the self-report block from {block.path} ({block.action}).")
    if not change.changed:
        click.echo(f"{path}: no reflection hook registered, nothing changed.")
        return
    click.echo(f"Removed {len(change.before)} reflection hook(s) from {path}")
    _echo_backup(change.backup)
    click.echo(RESTART_NOTE)


def _self_report_status(hooks: list[InstalledHook], scope: str, root: Path | None) -> str:
    """What asks the agent for its self-report, in words (``reflect hook status``)."""
    asks = [
        "ask mode (the Stop hook asks once)"
        for hook in hooks
        if hook.spec == STOP_HOOK and "--ask" in command_words(hook.command)
    ]
    if root is not None:
        for name in _memory_files(scope):
            path = root / name
            if path.is_file() and has_block(path.read_text("utf-8", "replace")):
                asks.insert(0, f"the block in {path}")
    if not asks:
        return (
            "nothing asks the agent for one, so sidecars carry no confidence (reflect hook "
            "install adds the CLAUDE.md block)"
        )
    return "asked by " + " and ".join(asks)


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
        words = command_words(hook.command.replace('"$CLAUDE_PROJECT_DIR"', str(root or "")))
        exe = words[0] if words else ""
        if exe and shutil.which(exe) is None:
            click.echo(f"  warning: {exe} is not an executable file (or on PATH) here")
    mode = os.environ.get(config.MODE.env)  # as set: empty is off, not unset
    click.echo(f"{config.MODE.env} in this shell: {mode if mode is not None else '(unset)'}")
    if hooks:
        click.echo(f"self-report: {_self_report_status(hooks, scope, root)}")
    if root is not None:
        workspace = config.find_workspace(root)
        db, _ = workspace.path(config.DB)
        click.echo(f"{workspace.describe()}; database {db}")
    if scope != "user":
        try:
            found = git_hook_status(_project_dir(project_dir))
        except ReflectionError:
            return
        for name, hook_path, ours in found:
            state = "installed" if ours else "not installed (reflect hook install --git)"
            click.echo(f"git {name} hook: {state} at {hook_path}")
