"""The typed-config helper (agent_reflection.config) and the parsers built on it."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agent_reflection import config
from agent_reflection.config import build, check_keys, coerce_field
from agent_reflection.cycle.config import InvalidCycleConfig, load_config


class BadConfig(ValueError):
    pass


@dataclass(frozen=True)
class Item:
    name: str
    weight: float = 1.0


@dataclass(frozen=True)
class Settings:
    count: int
    share: float
    enabled: bool
    label: str | None
    tags: tuple[str, ...]
    items: tuple[Item, ...] = ()
    mode: str = "fast"


def positive_weights(obj: Any, where: str) -> None:
    if isinstance(obj, Item) and obj.weight <= 0:
        raise BadConfig(f"{where}: weight must be > 0, got {obj.weight}")


TOML = """
count = 3
share = 1
enabled = true
label = "x"
tags = ["a", "b"]
items = [{name = "first"}, {name = "second", weight = 0.5}]
"""


def test_builds_the_frozen_dataclass_with_defaults_and_conversions() -> None:
    built = build(Settings, tomllib.loads(TOML), "s.toml: [s]", error=BadConfig)
    assert built == Settings(
        count=3,
        share=1.0,
        enabled=True,
        label="x",
        tags=("a", "b"),
        items=(Item("first", 1.0), Item("second", 0.5)),
        mode="fast",
    )
    assert isinstance(built.share, float)  # an integer is accepted for a float and converted


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"colour": 1},
            "s.toml: [s]: unknown key(s) ['colour']; known keys: count, enabled, "
            "items, label, mode, share, tags",
        ),
        ({"count": True}, "s.toml: [s]: count must be an integer, got True"),
        ({"count": 2.5}, "s.toml: [s]: count must be an integer, got 2.5"),
        ({"share": "high"}, "s.toml: [s]: share must be a number, got 'high'"),
        ({"enabled": 1}, "s.toml: [s]: enabled must be true/false, got 1"),
        ({"label": 3}, "s.toml: [s]: label must be a string, got 3"),
        ({"tags": "a"}, "s.toml: [s]: tags must be a list, got 'a'"),
        ({"tags": ["a", 2]}, "s.toml: [s]: tags must be a string, got 2"),
        ({"items": [3]}, "s.toml: [s]: items[0] must be a table"),
        (
            {"items": [{"name": "a", "size": 1}]},
            "s.toml: [s].items[0]: unknown key(s) ['size']; known keys: name, weight",
        ),
        ({"items": [{"weight": 1}]}, "s.toml: [s].items[0]: missing key 'name'"),
        (
            {"items": [{"name": "a", "weight": 0}]},
            "s.toml: [s].items[0]: weight must be > 0, got 0.0",
        ),
    ],
)
def test_errors_name_the_table_path_and_the_field(change: dict[str, Any], message: str) -> None:
    table = {**tomllib.loads(TOML), **change}
    with pytest.raises(BadConfig) as caught:
        build(Settings, table, "s.toml: [s]", error=BadConfig, check=positive_weights)
    assert str(caught.value) == message


def test_a_field_without_default_is_required() -> None:
    table = tomllib.loads(TOML)
    del table["count"]
    with pytest.raises(BadConfig, match=r"^s.toml: \[s\]: missing key 'count'$"):
        build(Settings, table, "s.toml: [s]", error=BadConfig)


def test_the_caller_may_word_the_unknown_key_error() -> None:
    with pytest.raises(BadConfig, match=r"^t: 'a' then \['b', 'c'\]$"):
        check_keys(
            {"c": 1, "b": 2, "a": 3},
            {"a"},
            "t",
            error=BadConfig,
            wording=lambda where, unknown, known: f"{where}: {known[0]!r} then {list(unknown)}",
        )


def test_coerce_field_checks_one_value_like_the_file() -> None:
    assert coerce_field(Settings, "share", 2, "override s.share", error=BadConfig) == 2.0
    with pytest.raises(BadConfig, match=r"^override s.count: count must be an integer, got 'x'$"):
        coerce_field(Settings, "count", "x", "override s.count", error=BadConfig)
    with pytest.raises(BadConfig, match=r"items\[0\]: weight must be > 0"):
        coerce_field(
            Settings,
            "items",
            [{"name": "a", "weight": -1}],
            "override s.items",
            error=BadConfig,
            check=positive_weights,
        )


# --- the reflection cycle's config, built with the helper ----------------------------------


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "cycle.toml"
    path.write_text(text)
    return path


def test_cycle_config_reads_both_tables_and_converts_integers(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "[reflection]\nbatch_threshold = 4\nfallback_poll_seconds = 60\n"
        '[reflection.llm]\nurl = "http://127.0.0.1:1/v1"\ntimeout_seconds = 5\n',
    )
    config = load_config(path, env={})
    assert (config.batch_threshold, config.fallback_poll_seconds) == (4, 60.0)
    assert (config.llm.url, config.llm.timeout_seconds) == ("http://127.0.0.1:1/v1", 5.0)
    assert config.llm.max_tokens == 800  # left out: the default


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "[reflection]\nbatch_threshold = true\n",
            r"cycle.toml \[reflection\]: batch_threshold must be an integer, got True",
        ),
        (
            "[reflection.llm]\nmax_tokens = 1.5\n",
            r"cycle.toml \[reflection.llm\]: max_tokens must be an integer, got 1.5",
        ),
        (
            "[reflection.llm]\nmodl = 'x'\n",
            r"cycle.toml \[reflection.llm\]: unknown key 'modl'; known keys: api_key, .*model",
        ),
        (
            "[reflection]\nllm = 'x'\n",
            r"cycle.toml: \[reflection\] and \[reflection.llm\] must be tables",
        ),
    ],
)
def test_cycle_config_errors_name_file_table_and_key(
    tmp_path: Path, text: str, message: str
) -> None:
    with pytest.raises(InvalidCycleConfig, match=message):
        load_config(write(tmp_path, text), env={})


def test_cycle_llm_variables_beat_the_file_and_empty_counts_as_unset(tmp_path: Path) -> None:
    path = write(tmp_path, '[reflection.llm]\nurl = "http://file/v1"\nmodel = "m-file"\n')
    env = {
        "REFLECT_LLM_URL": " http://env/v1 ",
        "REFLECT_LLM_MODEL": "",
        "REFLECT_LLM_API_KEY": "k",
    }
    llm = load_config(path, env=env).llm
    assert (llm.url, llm.model, llm.api_key) == ("http://env/v1", "m-file", "k")


def test_cycle_config_that_is_not_toml_names_the_file(tmp_path: Path) -> None:
    with pytest.raises(InvalidCycleConfig, match=r"cycle.toml: unreadable TOML .*--config"):
        load_config(write(tmp_path, "[reflection\n"), env={})


# --- the declaration and the one precedence rule ---------------------------------------------

SRC = Path(__file__).resolve().parents[1] / "src" / "agent_reflection"
DOC = Path(__file__).resolve().parents[1] / "docs" / "configuration.md"
#: A name, not a prefix (``REFLECTION_``) or a pattern (``REFLECT_LLM_*``).
_OUR_VARIABLE = re.compile(
    r"(?<![A-Za-z0-9_])(?:REFLECT|AGENT_REFLECTION)[A-Z0-9_]*[A-Z0-9](?![A-Za-z0-9_*])"
)
#: Names in strings that are not environment variables.
NOT_VARIABLES = {
    "REFLECTION_MODES": "reflection.v1's enum of modes, named in docstrings",
}


def _named_variables() -> dict[str, set[str]]:
    """Every ``REFLECT*`` / ``AGENT_REFLECTION*`` name in a string of a ``src/`` module, and
    where: a variable read (``os.environ.get("REFLECT_DB")``, click's ``envvar=``, a constant)
    or named in a message (``$REFLECT_LLM_URL``)."""
    found: dict[str, set[str]] = {}
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                for name in _OUR_VARIABLE.findall(node.value):
                    found.setdefault(name, set()).add(str(path.relative_to(SRC)))
    return found


def test_every_variable_a_module_names_is_declared() -> None:
    declared = {s.env for s in config.SETTINGS}
    named = {n: where for n, where in _named_variables().items() if n not in NOT_VARIABLES}
    assert named, "the scan found nothing: its pattern is broken"
    undeclared = {n: sorted(where) for n, where in named.items() if n not in declared}
    assert not undeclared, (
        f"declare these in agent_reflection.config (SETTINGS) and read them through it: "
        f"{undeclared}"
    )


def test_the_scan_sees_reads_of_every_kind(tmp_path: Path) -> None:
    tree = ast.parse(
        'import os\nos.environ.get("REFLECT_NEW")\nENV = "AGENT_REFLECTION_X"\n'
        'msg = f"set $REFLECTION_Y or pass --y"\nclick.option(envvar="REFLECT_Z")\n'
        'prefix = "REFLECTION_"\nglob = "REFLECT_LLM_*"\n'
    )
    names = {
        n
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
        for n in _OUR_VARIABLE.findall(node.value)
    }
    assert names == {"REFLECT_NEW", "AGENT_REFLECTION_X", "REFLECTION_Y", "REFLECT_Z"}


def test_every_declared_setting_is_complete_and_once() -> None:
    envs = [s.env for s in config.SETTINGS]
    assert len(envs) == len(set(envs)) and len({s.name for s in config.SETTINGS}) == len(envs)
    for s in config.SETTINGS:
        assert s.help.strip().endswith(".") and s.used_by and s.kind in config.KINDS, s
        assert s.default_text
    keys = [s.key for s in config.SETTINGS if s.key]
    assert keys == ["reflection_cadence", "db", "reports"]


def test_configuration_doc_is_current() -> None:
    assert DOC.read_text("utf-8") == config.render_reference(), (
        "docs/configuration.md is out of date: run "
        "`python -m agent_reflection.config > docs/configuration.md`"
    )
    for s in config.SETTINGS:
        assert f"`{s.env}`" in DOC.read_text("utf-8")


def _project(tmp_path: Path) -> Any:
    return lambda key: config.project_value(tmp_path, key)


def test_precedence_command_line_environment_project_file_default(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.agent-reflection]\nreflection_cadence = 9\n")
    env = {"REFLECTION_CADENCE": "5"}
    assert config.resolve(config.CADENCE, cli=3, env=env, project=_project(tmp_path)) == (3, "cli")
    assert config.resolve(config.CADENCE, env=env, project=_project(tmp_path)) == (
        5,
        "$REFLECTION_CADENCE",
    )
    value, source = config.resolve(config.CADENCE, env={}, project=_project(tmp_path))
    assert value == 9 and source.endswith("pyproject.toml [tool.agent-reflection]")
    assert config.resolve(config.CADENCE, env={"REFLECTION_CADENCE": "  "}) == (7, "default")


def test_a_bad_source_raises_or_is_skipped_with_a_warning(tmp_path: Path) -> None:
    (tmp_path / ".agent-reflection.toml").write_text("reflection_cadence = 2\n")
    env = {"REFLECTION_CADENCE": "often"}
    with pytest.raises(config.InvalidSetting, match=r"\$REFLECTION_CADENCE: reflection_cadence"):
        config.resolve(config.CADENCE, env=env, project=_project(tmp_path))
    said: list[str] = []
    found = config.resolve(
        config.CADENCE, cli="x", env=env, project=_project(tmp_path), warn=said.append
    )
    assert found[0] == 2 and len(said) == 2
    assert said[0].startswith("--reflection-cadence: ") and said[1].endswith("; ignored")


def test_a_project_file_that_is_a_fifo_is_never_read(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pyproject.toml")  # a read would block for ever
    assert config.project_value(tmp_path, "reflection_cadence") is None


@pytest.mark.parametrize(
    ("setting", "raw", "value"),
    [
        (config.ASK, " Yes ", True),
        (config.ASK, "no", False),
        (config.LOCK_TIMEOUT, "2.5", 2.5),
        (config.STATE_DIR, " /tmp/s ", "/tmp/s"),
        (config.ESCALATION_THRESHOLD, "0", 0),
    ],
)
def test_values_parse_by_their_kind(setting: config.Setting, raw: str, value: object) -> None:
    assert config.resolve(setting, env={setting.env: raw}) == (value, f"${setting.env}")


@pytest.mark.parametrize("raw", ["-1", "soon", "nan", "true"])
def test_seconds_refuse_what_is_not_a_duration(raw: str) -> None:
    with pytest.raises(config.InvalidSetting, match="seconds >= 0"):
        config.parse(config.LOCK_TIMEOUT, raw if raw != "true" else True, "$X")


def test_mode_set_but_empty_is_not_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    """The one exception to "empty counts as unset": REFLECTION_MODE= turns capture off even
    when the hook's --mode says solo."""
    from agent_reflection.hooks.stop import capture_mode

    monkeypatch.setenv("REFLECTION_MODE", "")
    assert capture_mode(["--mode", "solo"]) == ("off", [])
    assert config.env_text(config.MODE, {"REFLECTION_MODE": ""}) is None
    monkeypatch.delenv("REFLECTION_MODE")
    assert capture_mode(["--mode", "solo"]) == ("solo", [])


def test_the_module_is_light_to_import() -> None:
    """The hooks import it on every tool call: os (and the package's errors) only."""
    code = (
        "import sys; import agent_reflection.config as c; "
        "print(sorted(m for m in ('typing', 'dataclasses', 'tomllib', 're', 'json') "
        "if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
