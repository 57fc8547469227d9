"""Reflection-cycle settings: defaults, overridden by a TOML file, then by the environment.

The file's tables are typed here (:class:`CycleConfig`, :class:`LLMConfig`, built by
:func:`agent_reflection.config.build`); the environment variables of the LLM tier are declared
with every other setting in :mod:`agent_reflection.config` (``REFLECT_LLM_URL``,
``REFLECT_LLM_MODEL``, ``REFLECT_LLM_API_KEY``) and beat the file, by the package's one rule.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from agent_reflection import config as settings
from agent_reflection.config import build
from agent_reflection.errors import ReflectionError


class InvalidCycleConfig(ReflectionError, ValueError):
    """A reflection-cycle TOML file has an unknown key or a value of the wrong type."""


@dataclass(frozen=True)
class LLMConfig:
    """Tier 2: any OpenAI-compatible chat-completions endpoint. No ``url``: tier skipped."""

    url: str = ""  # e.g. http://127.0.0.1:8000/v1/chat/completions (or the base .../v1)
    model: str = ""
    api_key: str = ""
    timeout_seconds: float = 60.0
    max_retries: int = 2
    backoff_seconds: float = 1.0
    prompt_path: str = ""  # a user template overriding data/prompts/reflection_analysis.txt
    max_tokens: int = 800
    # Bounds on what one answer may cost us: bytes read (the body is streamed and cut there),
    # wall time of one attempt (connect to last byte, not per socket read) and of all tier-2
    # work in one pass (attempts and backoff together).
    max_response_bytes: int = 2_000_000
    max_call_seconds: float = 120.0
    max_pass_seconds: float = 300.0


@dataclass(frozen=True)
class CycleConfig:
    """``[reflection]`` in the TOML file; defaults as the reflection-cycle design gives them."""

    enabled: bool = True
    batch_threshold: int = 10
    consecutive_failure_limit: int = 3
    lookback_seconds: int = 86_400
    min_result_length: int = 50
    timeout_pattern_limit: int = 3
    skill_failure_min: int = 3
    streak_scan_limit: int = 10
    fallback_poll_seconds: float = 21_600.0
    mutation_dir: str = "reports/cycle/mutations"
    platform_lock_timeout_seconds: float = 10.0  # wait for a lock on the platform's SQLite file
    llm: LLMConfig = LLMConfig()


def _one_unknown_key(where: str, unknown: Sequence[str], known: Sequence[str]) -> str:
    return f"{where}: unknown key {unknown[0]!r}; known keys: {', '.join(known)}"


def _table(file: Path, doc: Mapping[str, Any]) -> CycleConfig:
    """``[reflection]`` (or the whole file when it has none) and its ``[reflection.llm]``."""
    table = doc.get("reflection", doc)
    llm_table = table.get("llm", {}) if isinstance(table, dict) else None
    if not isinstance(table, dict) or not isinstance(llm_table, dict):
        raise InvalidCycleConfig(f"{file}: [reflection] and [reflection.llm] must be tables")
    own = {key: value for key, value in table.items() if key != "llm"}
    config = build(
        CycleConfig, own, f"{file} [reflection]", error=InvalidCycleConfig, wording=_one_unknown_key
    )
    llm = build(
        LLMConfig,
        llm_table,
        f"{file} [reflection.llm]",
        error=InvalidCycleConfig,
        wording=_one_unknown_key,
    )
    return replace(config, llm=llm)


def load_config(
    path: str | Path | None = None, env: Mapping[str, str] | None = None, **options: Any
) -> CycleConfig:
    """Defaults, then ``[reflection]`` / ``[reflection.llm]`` of ``path``, then env for the LLM
    (``env``, default ``os.environ``; an empty variable counts as unset), then ``options`` (the
    command line's ``[reflection]`` values; None: not given)."""
    config = CycleConfig()
    if path is not None:
        file = Path(path)
        try:
            doc = settings.read_toml(file)
        except settings.InvalidSetting as exc:
            raise InvalidCycleConfig(f"{exc}; fix the file or pass another --config") from exc
        config = _table(file, doc)
    config = replace(config, **{key: value for key, value in options.items() if value is not None})
    llm = replace(
        config.llm,
        url=settings.env_text(settings.LLM_URL, env) or config.llm.url,
        model=settings.env_text(settings.LLM_MODEL, env) or config.llm.model,
        api_key=settings.env_text(settings.LLM_API_KEY, env) or config.llm.api_key,
    )
    for name in ("batch_threshold", "consecutive_failure_limit", "lookback_seconds"):
        if getattr(config, name) < 1:
            raise InvalidCycleConfig(f"[reflection].{name} must be at least 1")
    positive = {
        "[reflection].platform_lock_timeout_seconds": config.platform_lock_timeout_seconds,
        "[reflection.llm].max_response_bytes": llm.max_response_bytes,
        "[reflection.llm].max_call_seconds": llm.max_call_seconds,
        "[reflection.llm].max_pass_seconds": llm.max_pass_seconds,
        "[reflection.llm].timeout_seconds": llm.timeout_seconds,
    }
    for name, value in positive.items():
        if not value > 0:
            raise InvalidCycleConfig(f"{name} must be greater than 0, got {value!r}")
    return replace(config, llm=llm)
