"""The Stop hook's capture: git state, self-report, risk floor, one atomic sidecar write.

Imported by :mod:`agent_reflection.hooks.stop` only once a capture is due, so the no-op paths
(mode off, ``stop_hook_active``) never pay for it. Standard library plus the package's
stdlib-only modules.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from agent_reflection.hooks.config import HookConfig
from agent_reflection.hooks.gitstate import GitState, read_git_state
from agent_reflection.hooks.outcome import Outcome
from agent_reflection.hooks.paths import (
    LockHeld,
    OutputDir,
    create_marker,
    iso_timestamp,
    open_output_dir,
    read_marker,
    remove_marker,
    sanitise_session_id,
    session_lock,
    sidecar_name,
    utc_now,
    write_new_file,
)

if TYPE_CHECKING:
    from agent_reflection.risk_floor import RiskTable
    from agent_reflection.sidecar import SelfReport

DEFAULT_OUT_DIR = os.path.join(".reflection", "sidecars")
DEFAULT_INPUT = os.path.join(".reflection", "input.json")
MAX_SELF_REPORT_BYTES = 1 << 20
MAX_SESSION_ID_CHARS = 256


def capture(config: HookConfig, payload: Mapping[str, Any], problems: list[str]) -> Outcome:
    """Capture one stop into a sidecar (or, in ask mode, ask once). Never raises on bad input."""
    active = payload.get("stop_hook_active") is True
    cwd = payload.get("cwd")
    if not (isinstance(cwd, str) and cwd and os.path.isdir(cwd)):
        cwd = os.getcwd()
    state = read_git_state(cwd)
    problems.extend(state.problems)
    root = state.root or os.path.abspath(cwd)
    out_dir = _under(root, config.out_dir, DEFAULT_OUT_DIR)
    session = sanitise_session_id(payload.get("session_id"))
    try:
        with open_output_dir(out_dir) as out:
            pending = read_marker(out, f"{session}.ask") if config.ask else None
            if active and pending is None:
                return Outcome("active", problems=tuple(problems))
            with session_lock(out, session):
                capture = _Capture(config, payload, state, root, out, session, problems)
                return capture.run(pending)
    except LockHeld as exc:
        problems.append(f"skipped: {exc}")
        return Outcome("locked", problems=tuple(problems))
    except OSError as exc:
        problems.append(f"cannot write to {out_dir}, nothing written: {exc}")
        return Outcome("failed", problems=tuple(problems))


class _Capture(NamedTuple):
    config: HookConfig
    payload: Mapping[str, Any]
    state: GitState
    root: str
    out: OutputDir
    session: str
    problems: list[str]

    def run(self, pending_asks: int | None) -> Outcome:
        # Imported here: the no-op paths above do not pay for them.
        from agent_reflection.risk_floor import evaluate_risk_floor
        from agent_reflection.sidecar import Provenance, Reflection, Risk, validate_sidecar

        config, problems = self.config, self.problems
        input_path = _under(self.root, config.input_path, DEFAULT_INPUT)
        report, report_problem = read_self_report(input_path)
        ask_name = f"{self.session}.ask"
        if (
            config.ask
            and report is None
            and pending_asks is None
            and self.payload.get("stop_hook_active") is not True
            and create_marker(self.out, ask_name, 1)
        ):
            return Outcome("asked", stdout=ask_block(input_path), problems=tuple(problems))
        if report_problem:
            problems.append(report_problem)
        files = self.changed_files(input_path)
        table, table_problem = load_table(config.risk_table)
        if table_problem:
            problems.append(table_problem)
        verdict = evaluate_risk_floor(files, table=table)
        now = utc_now()
        repo = os.path.basename(self.root.rstrip(os.sep)) or "unknown"
        record = Reflection(
            task_ref=config.task_ref or f"{repo}@{self.branch_label()}",
            agent=config.agent or "unknown",
            session_id=_session_field(self.payload.get("session_id")),
            timestamp=iso_timestamp(now),
            repo=repo,
            confidence=report.confidence if report else None,
            most_likely_wrong=report.most_likely_wrong if report else None,
            known_not_in_diff=report.known_not_in_diff if report else None,
            risk=Risk(verdict.needs_review, verdict.score, verdict.surface, verdict.reason),
            files_changed=tuple(files),
            provenance=Provenance(
                source="stop-hook",
                reflection_attempt=1 + (pending_asks or 0),
                degraded=bool(problems) or report is None,
                reflection_mode=config.mode,
            ),
        )
        validate_sidecar(record.to_dict())  # never write what the schema rejects
        data = (record.to_json() + "\n").encode("utf-8")
        name = write_new_file(self.out, sidecar_name(self.session, now), data)
        if pending_asks is not None:
            remove_marker(self.out, ask_name)
        return Outcome("written", os.path.join(self.out.path, name), problems=tuple(problems))

    def changed_files(self, input_path: str) -> list[str]:
        """The git state's files minus the hook's own output folder and self-report file."""
        root = self.state.root
        if root is None:
            return []
        skip_dir = _relative(root, self.out.path)
        skip_file = _relative(root, input_path)
        return [
            path
            for path in self.state.files
            if path != skip_file
            and not (skip_dir and (path == skip_dir or path.startswith(skip_dir + "/")))
        ]

    def branch_label(self) -> str:
        if self.state.branch:
            return self.state.branch
        if self.state.head_oid:
            return self.state.head_oid[:12]
        return "unknown"


def read_self_report(path: str) -> tuple[SelfReport | None, str | None]:
    """The agent's self-report at ``path``, or None and the reason (missing, unreadable, bad)."""
    from agent_reflection.errors import InvalidSidecar
    from agent_reflection.sidecar import parse_self_report

    try:
        raw = _read_regular_file(path, MAX_SELF_REPORT_BYTES + 1)
    except FileNotFoundError:
        return None, f"no self-report at {path}; self-report fields left null"
    except OSError as exc:
        return None, f"cannot read self-report {path}: {exc}"
    if len(raw) > MAX_SELF_REPORT_BYTES:
        return None, f"self-report {path} is larger than {MAX_SELF_REPORT_BYTES} bytes; ignored"
    try:
        obj = json.loads(raw)
    except ValueError as exc:  # bad JSON or bad UTF-8
        return None, f"self-report {path} is not JSON ({exc}); ignored"
    except RecursionError:
        return None, f"self-report {path} is nested too deeply; ignored"
    try:
        report = parse_self_report(obj)
    except InvalidSidecar as exc:
        return None, f"self-report {path} ignored: wrong shape at {exc.path}: {exc.expected}"
    if report.is_empty:
        return None, f"self-report {path} has none of the three fields; treated as missing"
    return report, None


def _read_regular_file(path: str, limit: int) -> bytes:
    """Up to ``limit`` bytes of a regular file; a FIFO or device is refused, never waited on."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path} is not a regular file")
        chunks: list[bytes] = []
        size = 0
        while size < limit:
            chunk = os.read(fd, limit - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def load_table(path: str | None) -> tuple[RiskTable | None, str | None]:
    """``REFLECTION_RISK_TABLE`` or the shipped table (None); a bad file falls back, degraded."""
    if path is None:
        return None, None
    from agent_reflection.errors import ReflectionError
    from agent_reflection.risk_floor import load_risk_table

    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # a FIFO would block the read
            raise OSError(f"{path} is not a regular file")
        return load_risk_table(path), None
    except (ReflectionError, OSError, ValueError) as exc:
        return None, f"REFLECTION_RISK_TABLE unusable, shipped table used instead: {exc}"


def ask_block(input_path: str) -> str:
    """The ask mode's one-line stdout: Claude Code's documented Stop block with a reason."""
    template = json.dumps(
        {
            "confidence": "<number 0..1: how likely the work is right>",
            "most_likely_wrong": {
                "surface": "auth|data|infra|ui|build|test|docs|none",
                "description": "<the most likely way the work is wrong>",
            },
            "known_not_in_diff": "<what you know that the diff does not show>",
        }
    )
    reason = (
        f"Before stopping, write a short self-report as JSON to {input_path} answering: "
        "(1) how confident are you that the work is right (0 to 1)? (2) what is most likely "
        "wrong, and on which surface? (3) what do you know that the diff does not show? "
        f"Shape: {template} (confidence as a number). Then stop; you will not be asked again."
    )
    return json.dumps({"decision": "block", "reason": reason}) + "\n"


def _under(root: str, configured: str | None, default: str) -> str:
    path = os.path.expanduser(configured) if configured else default
    return os.path.normpath(os.path.join(root, path))


def _relative(root: str, path: str) -> str | None:
    """``path`` relative to ``root`` with "/" separators; None when outside it or equal to it."""
    try:
        rel = os.path.relpath(os.path.realpath(path), os.path.realpath(root))
    except ValueError:
        return None
    if rel == os.curdir or rel == os.pardir or rel.startswith(os.pardir + os.sep):
        return None
    return rel.replace(os.sep, "/")


def _session_field(raw: object) -> str:
    if isinstance(raw, str) and raw.strip():
        return raw[:MAX_SESSION_ID_CHARS]
    return "unknown"
