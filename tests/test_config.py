"""The typed-config helper (agent_reflection.config) and the parsers built on it."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

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
