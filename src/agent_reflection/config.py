"""The one home of configuration: every setting declared once, one precedence rule, one reader.

**Declaration.** :data:`SETTINGS` lists every setting the package reads: its name, environment
variable, key in the project file (if any), command-line option (if any), default, type and a
one-line description. ``docs/configuration.md`` is generated from it
(``python -m agent_reflection.config > docs/configuration.md``; a test keeps it current) and a
test fails when a module names a ``REFLECT*`` / ``AGENT_REFLECTION*`` variable that is not
declared here.

**Precedence**, the same for every setting: the command line, then the environment, the
project file, the default; ``REFLECTION_MODE`` alone beats the hook's ``--mode``. The rule and
the exception's reason are written once, in :func:`render_reference`'s text (the docs page).

:func:`resolve` applies the rule; :func:`env_text` and :func:`project_value` read the sources.
A value that does not parse is an :class:`InvalidSetting` naming where it came from; a hook
passes ``warn`` instead, and then a bad source is skipped with a line on stderr (a hook never
fails the session).

**Typed tables.** :func:`build`, :func:`check_keys` and :func:`coerce_field` check a TOML table
against a frozen dataclass and build it (the pre-registration, the reflection cycle's config,
a user's risk table), by one set of rules:

- a key the dataclass has no field for is an error naming the table and the key, with the
  known keys (:func:`check_keys`);
- a field without a default must be present; a field with one may be left out;
- values are checked against the field's type hint: ``bool``, ``int`` (``true`` is not a
  number), ``float`` (an integer is accepted and converted), ``str``, ``X | None``,
  ``tuple[X, ...]`` (a TOML array) and ``tuple[SomeDataclass, ...]`` (an array of tables, each
  built by the same rules);
- ``check(obj, where)`` then validates ranges, enums and cross-field rules of each dataclass
  built, and raises with the same ``where``.

Every error of a table is the caller's exception class (``error``), its message starting with
``where``: the file and the table path (e.g. ``preregistration.toml: [p2].rules[0]``).

Import-light (``os`` and ``collections`` only at import; ``typing``, ``dataclasses`` and
``tomllib`` inside the functions that need them): the hooks read their settings through this
module on every tool call, and their tests keep ``typing`` and ``dataclasses`` off that path.
"""

from __future__ import annotations

import os
from collections import namedtuple

from agent_reflection.errors import ReflectionError

TYPE_CHECKING = False  # not imported from typing: the hooks import this module at start
if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Mapping, Sequence
    from typing import Any, TypeVar

    T = TypeVar("T")
    #: The exception a caller's errors are raised as (built from the message).
    ErrorType = Callable[[str], Exception]
    #: Validation after a dataclass is built: ``check(obj, where)`` raises on a bad value.
    Check = Callable[[Any, str], None]
    #: Words for an unknown key: ``(where, unknown keys sorted, known keys sorted) -> message``.
    UnknownWording = Callable[[str, Sequence[str], Sequence[str]], str]
    #: A project-file lookup: key -> (value, where) or None.
    ProjectLookup = Callable[[str], tuple[object, str] | None]

#: The project's own config file (top-level keys).
PROJECT_FILE = ".agent-reflection.toml"
#: The table holding the same keys in the project's ``pyproject.toml``.
PYPROJECT_TABLE = ("tool", "agent-reflection")
#: Words an on/off setting reads as on (anything else is off).
TRUE_WORDS = frozenset({"1", "true", "yes", "on"})


class InvalidSetting(ReflectionError, ValueError):
    """A setting's value does not parse; the message names where it came from and the fix."""


class Setting(
    namedtuple(
        "Setting",
        ("name", "env", "kind", "help", "used_by", "default", "default_text", "option", "key"),
        defaults=(None, "", "", ""),
    )
):
    """One setting, declared once: a named tuple (a frozen dataclass would cost each hook call
    the ``dataclasses`` import; ``collections`` comes with ``json``, which the hooks import).

    ``kind`` says how a value parses (:data:`KINDS`); ``default`` is the value when no source
    sets it (``None``: none, the user of the setting decides, as ``default_text`` says; left
    out, it is the default in backticks, or "(none)"); ``option`` is the command-line option
    that beats the environment; ``key`` the project-file key; ``used_by`` names what reads it.
    """

    __slots__ = ()
    name: str
    env: str
    kind: str
    help: str
    used_by: str
    default: Any
    default_text: str
    option: str
    key: str

    def __new__(cls, *args: Any, **kwargs: Any) -> Setting:
        self = super().__new__(cls, *args, **kwargs)
        if self.default_text:
            return self
        shown = "(none)" if self.default is None else f"`{self.default}`"
        return self._replace(default_text=shown)


# --- parsing, by kind -------------------------------------------------------------------------


def _count(setting: Setting, value: object, where: str) -> int:
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    raise InvalidSetting(
        f"{where}: {setting.name} must be a whole number >= 0 (0 disables it), got {value!r}; "
        f"fix the value or remove it to use the default ({setting.default_text})"
    )


def _seconds(setting: Setting, value: object, where: str) -> float:
    try:
        seconds = float(value) if isinstance(value, str | int | float) else -1.0
    except ValueError:
        seconds = -1.0
    if isinstance(value, bool) or not seconds >= 0:
        raise InvalidSetting(
            f"{where}: {setting.name} must be a number of seconds >= 0 (e.g. 30), got {value!r}"
        )
    return seconds


def _text(setting: Setting, value: object, where: str) -> str:
    if not isinstance(value, str):
        raise InvalidSetting(f"{where}: {setting.name} must be a string, got {value!r}")
    return value.strip()


def _flag(setting: Setting, value: object, where: str) -> bool:
    del setting, where  # any other word is off: an on/off switch never fails
    return isinstance(value, str) and value.strip().lower() in TRUE_WORDS


#: How each kind of value parses, and how the docs name it.
KINDS: dict[str, tuple[Callable[[Setting, object, str], object], str]] = {
    "count": (_count, "whole number ≥ 0"),
    "seconds": (_seconds, "seconds ≥ 0"),
    "path": (_text, "path"),
    "text": (_text, "text"),
    "word": (_text, "word"),
    "flag": (_flag, "`1`, `true`, `yes` or `on`; else off"),
}


def parse(setting: Setting, value: object, where: str) -> Any:
    """``value`` as ``setting`` wants it, else :class:`InvalidSetting` naming ``where``."""
    return KINDS[setting.kind][0](setting, value, where)


# --- the declaration --------------------------------------------------------------------------

#: Cadence checkpoint every N tool calls. The design proposed 10; the shipped peer
#: implementation moved to 7 after field use: at 10, "same command, different flag" loops ran
#: 6-7 tries before the first checkpoint, and 5 over-injected on normal tasks (docs/in-loop.md).
CADENCE = Setting(
    "reflection_cadence",
    env="REFLECTION_CADENCE",
    key="reflection_cadence",
    option="--reflection-cadence",
    kind="count",
    default=7,
    help="Cadence checkpoint every N tool calls; 0 disables it.",
    used_by="in-loop hook, `reflect cadence`",
)
#: Failures of one kind before the anti-loop detector escalates; 4 was chosen on the tuning
#: half of a reader's labels of real agent runs (docs/in-loop.md, "Checked against a reader's
#: labels").
ESCALATION_THRESHOLD = Setting(
    "escalation_threshold",
    env="REFLECTION_ESCALATION_THRESHOLD",
    option="--escalation-threshold",
    kind="count",
    default=4,
    help="Failures of the same kind before the anti-loop hook escalates; 0 disables it.",
    used_by="in-loop hook",
)
STATE_DIR = Setting(
    "state_dir",
    env="REFLECTION_STATE_DIR",
    kind="path",
    default_text="`$XDG_CACHE_HOME/agent-reflection`, else `~/.cache/agent-reflection`",
    help="Folder of the hooks' per-session state files and the reflection agent's reply log.",
    used_by="hooks, `reflect load reflection-replies`",
)
MODE = Setting(
    "mode",
    env="REFLECTION_MODE",
    option="--mode",
    kind="word",
    default="off",
    help="Capture mode of the Stop hook: `solo` or `orchestrated`; empty, `off` or anything "
    "else is off (fail-closed). Beats the hook's `--mode`, the default when it is unset.",
    used_by="Stop and SessionStart hooks, `reflect hook status`",
)
SIDECAR_DIR = Setting(
    "sidecar_dir",
    env="REFLECTION_DIR",
    kind="path",
    default_text="`<repo>/.reflection/sidecars/`",
    help="Sidecar folder; relative to the repository root, `~` expanded; outside a "
    "repository only an absolute path is used.",
    used_by="Stop hook, git post-commit hook",
)
INPUT = Setting(
    "input",
    env="REFLECTION_INPUT",
    kind="path",
    default_text="`<repo>/.reflection/input.json`",
    help="The agent's self-report file; relative to the repository root.",
    used_by="Stop hook",
)
TASK_REF = Setting(
    "task_ref",
    env="REFLECTION_TASK_REF",
    kind="text",
    default_text="`<repo>@<branch>`",
    help="The sidecar's `task_ref`.",
    used_by="Stop hook",
)
AGENT = Setting(
    "agent",
    env="REFLECTION_AGENT",
    kind="text",
    default_text="`unknown`",
    help="The sidecar's `agent` (persona or runtime id).",
    used_by="Stop hook",
)
RISK_TABLE = Setting(
    "risk_table",
    env="REFLECTION_RISK_TABLE",
    option="--table",
    kind="path",
    default_text="the shipped table",
    help="TOML risk table overriding the shipped one (format of `data/risk_floor.toml`).",
    used_by="Stop hook, `reflect risk`",
)
ASK = Setting(
    "ask",
    env="REFLECTION_ASK",
    kind="flag",
    default=False,
    default_text="off",
    help="Ask mode: a stop without a valid self-report asks the agent once for one "
    "(`reflect hook install --self-report ask` writes it into the Stop hook's command, "
    "`reflect-stop-hook --ask`, which beats the variable).",
    used_by="Stop hook",
)
WORKSPACE = Setting(
    "workspace",
    env="REFLECT_WORKSPACE",
    kind="path",
    default_text="the nearest folder at or above the current one holding `.agent-reflection.toml` "
    "(or a `pyproject.toml` with `[tool.agent-reflection]`), else the current folder",
    help="The workspace: where the database and the reports are, found from any folder below it "
    "as git finds its repository. `reflect hook install` marks the project as one.",
    used_by="every command with `--db`, `reflect run`, the notebooks",
)
DB = Setting(
    "db",
    env="REFLECT_DB",
    option="--db",
    key="db",
    kind="path",
    default="data/reflection.duckdb",
    default_text="`data/reflection.duckdb` in the workspace",
    help="The DuckDB file every command reads and writes. From the project file (or the "
    "default) it is relative to the workspace; from `--db` or the variable, to the current "
    "folder.",
    used_by="every command with `--db`, the notebooks",
)
REPORTS = Setting(
    "reports",
    env="REFLECT_REPORTS",
    option="--out",
    key="reports",
    kind="path",
    default="reports",
    default_text="`reports` in the workspace",
    help="The folder reports are written to (relative as the database is).",
    used_by="`reflect run`, the notebooks",
)
LOCK_TIMEOUT = Setting(
    "lock_timeout",
    env="REFLECT_LOCK_TIMEOUT",
    option="--wait",
    kind="seconds",
    default=30.0,
    default_text="30",
    help="Seconds to wait for another process holding the database (0 fails at once).",
    used_by="every command with `--db`, and the notebooks `reflect run` starts",
)
CACHE_DIR = Setting(
    "cache_dir",
    env="REFLECT_CACHE_DIR",
    option="--cache-dir",
    kind="path",
    default_text="`$XDG_CACHE_HOME/agent-reflection`, else `~/.cache/agent-reflection`",
    help="Where git bundles are cloned once.",
    used_by="`reflect load git`, `reflect run agent-vs-human`",
)
PREREGISTRATION = Setting(
    "preregistration",
    env="REFLECT_PREREGISTRATION",
    option="--prereg",
    kind="path",
    default_text="`./preregistration.toml`, else the packaged copy",
    help="The pre-registration TOML the experiments run under.",
    used_by="`reflect run`, `reflect prereg`",
)
NOTEBOOKS = Setting(
    "notebooks",
    env="REFLECT_NOTEBOOKS",
    kind="path",
    default_text="`./notebooks`, the checkout's `notebooks/`, else the packaged copy",
    help="Folder of the notebooks `reflect run` executes.",
    used_by="`reflect run`",
)
SERVE_TOKEN = Setting(
    "serve_token",
    env="REFLECT_SERVE_TOKEN",
    option="--token",
    kind="text",
    help="Bearer token every OTLP export to `reflect serve` must carry.",
    used_by="`reflect serve`",
)
LLM_URL = Setting(
    "llm_url",
    env="REFLECT_LLM_URL",
    kind="text",
    default_text="no LLM tier",
    help="OpenAI-compatible chat-completions endpoint of the reflection cycle's tier 2; beats "
    "`[reflection.llm].url` of the `--config` file (as the next two beat `model`, `api_key`).",
    used_by="`reflect cycle`",
)
LLM_MODEL = Setting(
    "llm_model",
    env="REFLECT_LLM_MODEL",
    kind="text",
    help="Model name sent to that endpoint.",
    used_by="`reflect cycle`",
)
LLM_API_KEY = Setting(
    "llm_api_key",
    env="REFLECT_LLM_API_KEY",
    kind="text",
    help="API key sent to that endpoint.",
    used_by="`reflect cycle`",
)
SHARED = Setting(
    "shared",
    env="AGENT_REFLECTION_SHARED",
    kind="path",
    default_text="`shared/` beside the checkout",
    help="Folder whose `data/` holds the real third-party exports (the in-loop replay's "
    "default `--agent-runs` and `--transcripts`, the tests).",
    used_by="`reflect run in-loop`, the tests",
)
#: Variables of other tools that we read (declared for the docs; not ours to rename).
PROJECT_DIR = Setting(
    "claude_project_dir",
    env="CLAUDE_PROJECT_DIR",
    kind="path",
    default_text="the event's `cwd`",
    help="Set by Claude Code for hooks: the project root (the cadence's project file).",
    used_by="in-loop hook",
)
CLAUDE_CONFIG_DIR = Setting(
    "claude_config_dir",
    env="CLAUDE_CONFIG_DIR",
    kind="path",
    default_text="`~/.claude`",
    help="Claude Code's user folder: `--user` settings and agents go there.",
    used_by="`reflect hook install --user`, `reflect agent install --user`",
)
XDG_CACHE_HOME = Setting(
    "xdg_cache_home",
    env="XDG_CACHE_HOME",
    kind="path",
    default_text="`~/.cache`",
    help="Base of the hooks' state folder and the git bundle cache.",
    used_by="hooks, `reflect load git`",
)
XDG_STATE_HOME = Setting(
    "xdg_state_home",
    env="XDG_STATE_HOME",
    kind="path",
    default_text="`~/.local/state`",
    help="Base of the settings backups `reflect hook install` keeps.",
    used_by="`reflect hook install/uninstall`",
)

#: Every setting, in the order declared above (the order of the docs): each is written once.
SETTINGS: tuple[Setting, ...] = tuple(v for v in dict(globals()).values() if type(v) is Setting)
#: The variables that belong to other tools (Claude Code, XDG).
FOREIGN: tuple[Setting, ...] = (PROJECT_DIR, CLAUDE_CONFIG_DIR, XDG_CACHE_HOME, XDG_STATE_HOME)


# --- reading the sources ----------------------------------------------------------------------


def env_text(setting: Setting, env: Mapping[str, str] | None = None) -> str | None:
    """The variable without surrounding blanks; ``None`` when unset or empty (the rule)."""
    raw = (os.environ if env is None else env).get(setting.env)
    value = raw.strip() if raw is not None else ""
    return value or None


def project_files(project_dir: str | os.PathLike[str]) -> tuple[str, str]:
    """The project's two config files, in precedence order."""
    root = os.fspath(project_dir)
    return os.path.join(root, PROJECT_FILE), os.path.join(root, "pyproject.toml")


def project_value(project_dir: str | os.PathLike[str], key: str) -> tuple[object, str] | None:
    """``(value, where)`` of ``key`` in ``.agent-reflection.toml``, else in ``pyproject.toml``'s
    ``[tool.agent-reflection]``; ``None`` when neither sets it.

    Other keys are not checked: ``pyproject.toml`` holds other tools' settings. A file that is
    not valid TOML raises :class:`InvalidSetting` naming it; anything but a regular file (a
    FIFO would block the read) is skipped.
    """
    own, pyproject = project_files(project_dir)
    for path, table in ((own, ()), (pyproject, PYPROJECT_TABLE)):
        if not os.path.isfile(path):
            continue
        doc: object = read_toml(path)
        for name in table:
            doc = doc.get(name) if isinstance(doc, dict) else None
        if isinstance(doc, dict) and key in doc:
            return doc[key], f"{path} [{'.'.join(table)}]" if table else path
    return None


def read_toml(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The TOML document at ``path``; :class:`InvalidSetting` naming the file when unreadable."""
    import tomllib

    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InvalidSetting(f"{os.fspath(path)}: unreadable TOML ({exc})") from exc


def resolve(
    setting: Setting,
    *,
    cli: object = None,
    env: Mapping[str, str] | None = None,
    project: ProjectLookup | None = None,
    warn: Callable[[str], None] | None = None,
) -> tuple[Any, str]:
    """``(value, source)`` by the one precedence rule: ``cli`` (not ``None``) > the environment
    (``env``, default ``os.environ``) > the project file (``project(key)``, e.g.
    ``lambda key: project_value(root, key)``; asked only when needed) > the default.

    ``source`` is ``"cli"``, ``"$VARIABLE"``, the file (and table) or ``"default"``. A value
    that does not parse raises :class:`InvalidSetting`; with ``warn``, it is passed to ``warn``
    instead and the next source is tried.
    """
    variable = f"${setting.env}"
    for value, where, source in (
        (cli, setting.option, "cli"),
        (env_text(setting, env), variable, variable),
    ):
        if value is None:
            continue
        try:
            return parse(setting, value, where), source
        except InvalidSetting as exc:
            _skip(exc, warn)
    if project is not None and setting.key:
        try:
            found = project(setting.key)
            if found is not None:
                return parse(setting, found[0], found[1]), found[1]
        except InvalidSetting as exc:
            _skip(exc, warn)
    return setting.default, "default"


def _skip(exc: InvalidSetting, warn: Callable[[str], None] | None) -> None:
    if warn is None:
        raise exc
    warn(f"{exc}; ignored")


# --- the workspace ------------------------------------------------------------------------------

#: What marks a workspace's root: the project file (or ``pyproject.toml`` with our table).
WORKSPACE_MARKERS = (PROJECT_FILE, "pyproject.toml")


class Workspace(namedtuple("Workspace", ("root", "marker", "source"))):
    """The workspace :func:`find_workspace` found: its ``root`` folder (absolute), the
    ``marker`` file that made it one (None: none found, or named by the variable) and
    ``source``, how it was found, in words."""

    __slots__ = ()
    root: str
    marker: str | None
    source: str

    def path(self, setting: Setting, cli: object = None) -> tuple[str, str]:
        """``(absolute path, source)`` of a path ``setting`` (:data:`DB`, :data:`REPORTS`) by
        the one precedence rule: from the command line or the environment relative to the
        current folder, from the project file or the default relative to :attr:`root`."""
        value, source = resolve(setting, cli=cli, project=lambda key: project_value(self.root, key))
        base = os.getcwd() if source in ("cli", f"${setting.env}") else self.root
        return os.path.normpath(os.path.join(base, os.path.expanduser(value))), source

    def describe(self) -> str:
        """Where the workspace is and how it was found, for messages."""
        return f"workspace {self.root} ({self.source})"


def find_workspace(start: str | os.PathLike[str] | None = None) -> Workspace:
    """The workspace for ``start`` (default: the current folder): ``$REFLECT_WORKSPACE``, else
    the nearest folder at or above ``start`` holding ``.agent-reflection.toml`` or a
    ``pyproject.toml`` with ``[tool.agent-reflection]``, else ``start`` itself (as before
    workspaces: paths relative to the current folder)."""
    here = os.path.abspath(os.fspath(start) if start is not None else os.getcwd())
    named = env_text(WORKSPACE)
    if named is not None:
        root = os.path.abspath(os.path.expanduser(named))
        if not os.path.isdir(root):
            raise InvalidSetting(
                f"${WORKSPACE.env}: {root} is not a folder; set it to your workspace's folder "
                f"(the one holding {PROJECT_FILE}) or unset it"
            )
        return Workspace(root, None, f"${WORKSPACE.env}")
    folder = here
    while True:
        marker = marker_in(folder)
        if marker is not None:
            return Workspace(folder, marker, f"found by {marker}")
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    return Workspace(
        here,
        None,
        f"no {PROJECT_FILE} in {here} or any folder above, and ${WORKSPACE.env} unset: the "
        "current folder",
    )


def marker_in(folder: str) -> str | None:
    """The marker that makes ``folder`` a workspace (the project file, or ``pyproject.toml``
    with its table, named so), else None."""
    own = os.path.join(folder, PROJECT_FILE)
    if os.path.isfile(own):
        return own
    pyproject = os.path.join(folder, "pyproject.toml")
    if os.path.isfile(pyproject):
        try:
            doc: object = read_toml(pyproject)
        except InvalidSetting:
            return None  # another tool's broken file does not make a workspace
        for name in PYPROJECT_TABLE:
            doc = doc.get(name) if isinstance(doc, dict) else None
        if isinstance(doc, dict):
            return f"{pyproject} [{'.'.join(PYPROJECT_TABLE)}]"
    return None


# --- docs/configuration.md --------------------------------------------------------------------


def render_reference() -> str:
    """The text of ``docs/configuration.md``, from :data:`SETTINGS`."""

    def cell(text: str) -> str:
        return text.replace("|", "\\|") if text else ""

    def row(s: Setting) -> str:
        cells = (
            f"`{s.env}`",
            f"`{s.option}`" if s.option else "",
            f"`{s.key}`" if s.key else "",
            s.default_text,
            KINDS[s.kind][1],
            s.help,
            s.used_by,
        )
        return "| " + " | ".join(cell(c) for c in cells) + " |"

    head = (
        "| variable | command line | project file | default | type | what | read by |\n"
        "|---|---|---|---|---|---|---|"
    )
    ours = [row(s) for s in SETTINGS if s not in FOREIGN]
    foreign = [row(s) for s in FOREIGN]
    return "\n".join(
        [
            "# Configuration: every setting and variable",
            "",
            "<!-- Generated from agent_reflection/config.py (SETTINGS): run",
            "     `python -m agent_reflection.config > docs/configuration.md`; a test keeps it "
            "current. -->",
            "",
            "Every setting is declared once, in `agent_reflection.config`, and read by one rule.",
            "The first source that sets a value wins:",
            "",
            "1. the command line (an option of `reflect`, or of a hook's command as "
            "`reflect hook install` writes it);",
            "2. the environment variable (surrounding blanks ignored; an empty value counts as "
            "unset);",
            f"3. the project file: `{PROJECT_FILE}` at the project root (top-level keys), else "
            "`[tool.agent-reflection]` in its `pyproject.toml`;",
            "4. the default.",
            "",
            "One exception: `REFLECTION_MODE` beats the Stop hook's `--mode`. `reflect hook "
            "install` writes `--mode` into the hook's command as the install-time default; the "
            "session's environment is the choice at run time, and set but empty means off.",
            "",
            "A value that does not parse stops a command with an error naming where it came "
            "from. A hook never fails the session: it skips that source with a line on stderr "
            "(shown in Claude Code's debug mode) and takes the next one.",
            "",
            "## Ours",
            "",
            head,
            *ours,
            "",
            "## Other tools' variables we read",
            "",
            head,
            *foreign,
            "",
            "## Files with their own schema",
            "",
            "- `reflect cycle --config FILE`: the `[reflection]` and `[reflection.llm]` tables "
            "([cycle.md](cycle.md)); the `REFLECT_LLM_*` variables above beat the file.",
            "- The pre-registration (`preregistration.toml`, [experiments.md](experiments.md)).",
            "- A risk table (`REFLECTION_RISK_TABLE`, [capture.md](capture.md)).",
            "",
            "Each is checked by the typed-table rules of `agent_reflection.config.build`: an "
            "unknown key or a value of the wrong type is an error naming the file, the table "
            "and the key.",
            "",
        ]
    )


# --- typed TOML tables ------------------------------------------------------------------------


def unknown_keys_message(where: str, unknown: Sequence[str], known: Sequence[str]) -> str:
    return f"{where}: unknown key(s) {list(unknown)}; known keys: {', '.join(known)}"


def check_keys(
    table: Mapping[str, Any],
    known: Collection[str],
    where: str,
    *,
    error: ErrorType,
    wording: UnknownWording = unknown_keys_message,
) -> None:
    """Raise ``error`` when ``table`` has a key outside ``known``."""
    unknown = sorted(str(key) for key in table if key not in known)
    if unknown:
        raise error(wording(where, unknown, sorted(known)))


def build(
    cls: type[T],
    table: Mapping[str, Any],
    where: str,
    *,
    error: ErrorType,
    check: Check | None = None,
    wording: UnknownWording = unknown_keys_message,
) -> T:
    """The frozen dataclass ``cls`` from ``table`` (see the module docstring for the rules)."""
    import dataclasses
    import typing

    hints = typing.get_type_hints(cls)
    declared = dataclasses.fields(cls)  # type: ignore[arg-type]
    check_keys(table, [f.name for f in declared], where, error=error, wording=wording)
    values: dict[str, Any] = {}
    for f in declared:
        if f.name not in table:
            if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING:
                continue
            raise error(f"{where}: missing key {f.name!r}")
        values[f.name] = _coerce(hints[f.name], table[f.name], where, f.name, error, check)
    obj = cls(**values)
    if check is not None:
        check(obj, where)
    return obj


def coerce_field(
    cls: type[Any],
    key: str,
    value: Any,
    where: str,
    *,
    error: ErrorType,
    check: Check | None = None,
) -> Any:
    """``value`` checked and converted for the field ``key`` of ``cls`` (e.g. an override)."""
    import typing

    return _coerce(typing.get_type_hints(cls)[key], value, where, key, error, check)


def _coerce(
    tp: Any, value: Any, where: str, key: str, error: ErrorType, check: Check | None
) -> Any:
    import dataclasses
    import types
    import typing

    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    bad = f"{where}: {key} must be {_describe(tp)}, got {value!r}"
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        inner = next(a for a in args if a is not type(None))
        return _coerce(inner, value, where, key, error, check)
    if origin is tuple:
        if not isinstance(value, list | tuple):
            raise error(bad)
        item = args[0]
        if dataclasses.is_dataclass(item):
            out = []
            for i, v in enumerate(value):
                if not isinstance(v, dict):
                    raise error(f"{where}: {key}[{i}] must be a table")
                out.append(build(item, v, f"{where}.{key}[{i}]", error=error, check=check))  # type: ignore[arg-type]
            return tuple(out)
        return tuple(_coerce(item, v, where, key, error, check) for v in value)
    if tp is bool:
        if not isinstance(value, bool):
            raise error(bad)
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise error(bad)
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise error(bad)
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise error(bad)
        return value
    raise error(bad)  # pragma: no cover (a field type this helper does not know)


def _describe(tp: Any) -> str:
    import types
    import typing

    origin = typing.get_origin(tp)
    if origin is tuple:
        return "a list"
    if origin in (typing.Union, types.UnionType):  # TOML has no null: X | None is written as X
        return " or ".join(_describe(a) for a in typing.get_args(tp) if a is not type(None))
    return {bool: "true/false", int: "an integer", float: "a number", str: "a string"}.get(
        tp, "a value"
    )


if __name__ == "__main__":
    import sys

    sys.stdout.write(render_reference())
