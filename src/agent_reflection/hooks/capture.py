"""The Stop hook's capture: git state, self-report, risk floor, one atomic sidecar write.

Imported by :mod:`agent_reflection.hooks.stop` only once a capture is due, so the no-op paths
(mode off, ``stop_hook_active``) never pay for it. Standard library plus the package's
stdlib-only modules.

Start-up time is the hook's main cost, so the capture path imports none of ``typing``,
``dataclasses``, ``inspect`` or ``pathlib``, and ``tomllib`` only when the risk table changed
(``tests/test_hook_stop.py`` checks it): records are plain dicts checked by
:mod:`agent_reflection.reflection.checks` (the checks ``validate_sidecar`` runs), the risk
floor is :mod:`agent_reflection.reflection.risk_floor` on the table it keeps parsed in the
hooks' state folder, and JSON is the standard library's (whose ``re`` the console script pip
23.2 writes imports anyway).
"""

from __future__ import annotations

import json
import os
import stat
import time
from collections import namedtuple

from agent_reflection import config
from agent_reflection.errors import InvalidSidecar, ReflectionError
from agent_reflection.hooks.gitstate import (
    GitFailed,
    outside_git_dir,
    read_git_state,
    session_commits,
    work_tree_blobs,
)
from agent_reflection.hooks.paths import (
    LockHeld,
    OutputDir,
    create_marker,
    iso_timestamp,
    open_output_dir,
    read_marker,
    read_regular,
    read_start,
    sanitise_session_id,
    session_lock,
    sidecar_name,
    start_path,
    state_dir,
    unlink_quietly,
    write_new_file,
)
from agent_reflection.names import record_text
from agent_reflection.redact import redact_unlinkable
from agent_reflection.reflection.checks import check_self_report, is_oid, reflection_row
from agent_reflection.reflection.fields import (
    MAX_KEPT_SELF_REPORT_CHARS,
    MAX_SESSION_COMMITS,
    MAX_UNCOMMITTED_FILES,
    RECORD,
    SCHEMA_VERSION,
    SELF_REPORT_FIELDS,
)
from agent_reflection.reflection.risk_floor import evaluate_risk_floor, read_risk_table

TYPE_CHECKING = False  # annotations only
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from agent_reflection.hooks.gitstate import GitState
    from agent_reflection.reflection.risk_floor import RiskTable

DEFAULT_OUT_DIR = os.path.join(".reflection", "sidecars")
DEFAULT_INPUT = os.path.join(".reflection", "input.json")
MAX_SELF_REPORT_BYTES = 1 << 20
MAX_SESSION_ID_CHARS = 256


def capture(mode: str, ask: bool, payload: Mapping[str, Any], problems: list[str]) -> str | None:
    """Capture one stop into a sidecar (or, in ask mode, ask once); the ask mode's stdout, if
    any. What went wrong or was skipped is appended to ``problems``. Never raises on bad input.

    ``mode`` is the capture mode (``solo`` or ``orchestrated``), ``ask`` whether
    ``REFLECTION_ASK`` is on; the other settings are read here (:mod:`agent_reflection.config`).
    Where it writes: inside the git work tree that contains ``cwd`` (a ``cwd`` inside ``.git``
    counts as the work tree around it), or into an explicit ``REFLECTION_DIR``. Outside any work
    tree it writes only to an absolute ``REFLECTION_DIR`` and otherwise does nothing.
    """
    active = payload.get("stop_hook_active") is True
    cwd = payload.get("cwd")
    if not (isinstance(cwd, str) and cwd and os.path.isdir(cwd)):
        cwd = os.getcwd()
    cwd = os.path.abspath(cwd)
    state = read_git_state(outside_git_dir(cwd))
    problems.extend(state.problems)
    root, configured = state.root, config.env_text(config.SIDECAR_DIR)
    if root is not None:
        out_dir = _under(root, configured, DEFAULT_OUT_DIR, "REFLECTION_DIR", problems)
    elif configured is not None and os.path.isabs(os.path.expanduser(configured)):
        out_dir = os.path.normpath(os.path.expanduser(configured))
    else:
        problems.append(
            f"{cwd} is not inside a git work tree: nothing written (set REFLECTION_DIR to an "
            "absolute folder to capture sessions outside a repository)"
        )
        return None
    session = sanitise_session_id(payload.get("session_id"))
    try:
        with open_output_dir(out_dir, root) as out:
            pending = read_marker(out, f"{session}.ask") if ask else None
            if active and pending is None:
                return None
            with session_lock(out, session):
                capture = _Capture(mode, ask, payload, state, root or cwd, out, session, problems)
                return capture.run(pending)
    except LockHeld as exc:
        problems.append(f"skipped: {exc}")
    except OSError as exc:
        problems.append(f"cannot write to {out_dir}, nothing written: {exc}")
    return None


class _Capture(namedtuple("_Capture", "mode ask payload state root out session problems")):
    """One capture in progress."""

    __slots__ = ()
    mode: str
    ask: bool
    payload: Mapping[str, Any]
    state: GitState
    root: str
    out: OutputDir
    session: str
    problems: list[str]

    def run(self, pending_asks: int | None) -> str | None:
        """Write the sidecar; or, in ask mode without a self-report, ask (the block JSON)."""
        problems = self.problems
        input_path = _under(
            self.root, config.env_text(config.INPUT), DEFAULT_INPUT, "REFLECTION_INPUT", problems
        )
        report, report_problem, unusable = read_self_report(input_path, self.root)
        stale = self.stale_report(input_path) if report is not None else None
        if stale is not None:
            report, report_problem = None, stale
        ask_name = f"{self.session}.ask"
        if (
            self.ask
            and report is None
            and pending_asks is None
            and self.payload.get("stop_hook_active") is not True
            and create_marker(self.out, ask_name, 1)
        ):
            return ask_block(input_path)
        if report_problem:
            problems.append(report_problem)
        files = self.changed_files(input_path)
        table, table_problem = load_table(config.env_text(config.RISK_TABLE))
        if table_problem:
            problems.append(table_problem)
        risk = evaluate_risk_floor(files, table=table)
        now = time.time_ns()
        repo = os.path.basename(self.root.rstrip(os.sep)) or "unknown"
        branch = self.state.branch or (self.state.head_oid or "")[:12] or "unknown"
        # the agent's text, redacted before it is written (and pushed in a git note)
        fields = redact_unlinkable(report) if report else dict.fromkeys(SELF_REPORT_FIELDS)
        git = self.git_facts(input_path)
        session_id = self.payload.get("session_id")
        if not (isinstance(session_id, str) and session_id.strip()):
            session_id = "unknown"
        values = {  # reflection.v1's fields; a mechanical field is filled here
            "schema": SCHEMA_VERSION,
            "task_ref": config.env_text(config.TASK_REF) or f"{repo}@{branch}",
            "agent": config.env_text(config.AGENT) or "unknown",
            "session_id": session_id[:MAX_SESSION_ID_CHARS],
            "timestamp": iso_timestamp(now),
            "repo": repo,
            **fields,
            "risk": risk.to_dict(),
            "files_changed": files,
            "provenance": {
                "source": "stop-hook",
                "reflection_attempt": 1 + (pending_asks or 0),
                "degraded": bool(problems) or report is None,
                "reflection_mode": self.mode,
                **_kept_problem(report_problem, unusable),
            },
            "git": git,  # None: left out (outside a work tree, or git failed)
        }
        # In declaration order, as Reflection.to_dict writes it; an optional field left None is
        # left out.
        record = {
            f.name: values[f.name] for f in RECORD if f.required or values.get(f.name) is not None
        }
        reflection_row(record)  # never write what the schema rejects
        # names from the file system (paths, the work tree's, in messages too) may hold bytes
        # that are not UTF-8, os.fsdecode's escapes: the record holds their text (U+FFFD)
        text = json.dumps(record, indent=2, ensure_ascii=False) + "\n"
        data = record_text(text).encode("utf-8")
        write_new_file(self.out, sidecar_name(self.session, now), data)
        if pending_asks is not None:
            unlink_quietly(ask_name, self.out.fd)
        return None

    def changed_files(self, input_path: str, paths: tuple[str, ...] | None = None) -> list[str]:
        """The git state's files (or ``paths``) minus the hook's own output, self-report and
        settings backups.

        Backups are ``.claude/settings[.local].json.bak-*`` files that older installers left in
        the project; they are the installer's, not the session's work.
        """
        root = self.state.root
        if root is None:
            return []
        skip_dir = _relative(root, self.out.path)
        skip_file = _relative(root, input_path)
        return [
            path
            for path in (self.state.files if paths is None else paths)
            if path != skip_file
            and not (skip_dir and (path == skip_dir or path.startswith(skip_dir + "/")))
            and not _is_settings_backup(path)
        ]

    def git_facts(self, input_path: str) -> dict[str, Any] | None:
        """reflection.v1's ``git`` object, or None outside a work tree or when git failed.

        ``head_start`` comes from the SessionStart hook's record for this session and work
        tree; each step that fails leaves its part empty and adds a problem (degraded).
        """
        state, root = self.state, self.state.root
        if root is None or (state.problems and state.head_oid is None and not state.uncommitted):
            return None
        head_stop = state.head_oid
        oid_length = len(head_stop) if head_stop else 40
        head_start = self.head_start(root)
        commits: list[str] = []
        if head_start is not None and head_stop is not None:
            try:
                commits, more = session_commits(root, head_start, head_stop, MAX_SESSION_COMMITS)
            except GitFailed as exc:
                self.problems.append(f"git.commits left empty: {exc}")
            else:
                if more:
                    self.problems.append(
                        f"the session made more than {MAX_SESSION_COMMITS} commits; "
                        f"git.commits keeps the newest {MAX_SESSION_COMMITS}"
                    )
        paths = sorted(set(self.changed_files(input_path, state.uncommitted)))
        if len(paths) > MAX_UNCOMMITTED_FILES:
            self.problems.append(
                f"{len(paths)} uncommitted files; git.uncommitted keeps the first "
                f"{MAX_UNCOMMITTED_FILES} in path order"
            )
            paths = paths[:MAX_UNCOMMITTED_FILES]
        try:
            blobs = work_tree_blobs(root, paths, oid_length)
        except GitFailed as exc:
            self.problems.append(f"git.uncommitted left empty: {exc}")
            blobs = []
        return {
            "branch": state.branch,
            "head_start": head_start,
            "head_stop": head_stop,
            "commits": commits,
            "uncommitted": [{"path": path, "blob": blob} for path, blob in blobs],
        }

    def stale_report(self, input_path: str) -> str | None:
        """Why the self-report at ``input_path`` is an earlier session's (written before this
        session's SessionStart record), else None. The file is not consumed, so without this
        a session whose agent wrote none would carry the previous session's answers."""
        session_id = self.payload.get("session_id")
        if self.state.root is None or self.head_start(self.state.root) is None:
            return None  # no start record for this session here: nothing to compare with
        try:
            started = os.stat(start_path(os.environ, str(session_id))).st_mtime_ns
            written = os.stat(input_path).st_mtime_ns
        except OSError:
            return None
        if written >= started:
            return None
        return (
            f"self-report {input_path} predates this session (an earlier session's); ignored: "
            "the agent writes it again before it stops"
        )

    def head_start(self, root: str) -> str | None:
        """HEAD when this session started in this work tree (the SessionStart record)."""
        session_id = self.payload.get("session_id")
        if not isinstance(session_id, str) or not session_id:
            return None
        start = read_start(os.environ, session_id)
        if start is None:
            return None
        head = start.get("head")
        if not isinstance(head, str) or not is_oid(head) or head.endswith("\n"):
            return None
        if os.path.realpath(start["root"]) != os.path.realpath(root):
            return None  # started in another work tree: its HEAD says nothing about this one
        return head


def _kept_problem(problem: str | None, text: str | None) -> dict[str, str]:
    """``provenance``'s ``self_report_problem`` and ``self_report_text`` (when there was a
    problem, and a file whose text is kept)."""
    kept = {"self_report_problem": problem} if problem else {}
    if problem and text is not None:
        # redacted whole, then cut: a cut first could leave part of a secret unrecognised
        kept["self_report_text"] = redact_unlinkable(text)[:MAX_KEPT_SELF_REPORT_CHARS]
    return kept


def read_self_report(
    path: str, base: str | None = None
) -> tuple[dict[str, Any] | None, str | None, str | None]:
    """``(report, problem, text)``: the agent's self-report at ``path``, else None and the
    reason (missing, unreadable, bad); ``text``, the file's text when it was read (decoded with
    replacement), so an unusable report can be kept beside the reason.

    Inside ``base`` (the work tree) no symlink is followed on the way to it; a FIFO or device
    is refused without waiting.

    The report is a dict with the three self-report keys (absent ones None, ``confidence`` a
    float), checked as ``record.parse_self_report`` checks it (``checks.check_self_report``).
    """
    try:
        raw = read_regular(path, MAX_SELF_REPORT_BYTES + 1, base)
    except FileNotFoundError:
        return None, f"no self-report at {path}; self-report fields left null", None
    except OSError as exc:
        return None, f"cannot read self-report {path}: {exc}", None
    text = raw.decode("utf-8", "replace")
    if len(raw) > MAX_SELF_REPORT_BYTES:
        problem = f"self-report {path} is larger than {MAX_SELF_REPORT_BYTES} bytes; ignored"
        return None, problem, text
    try:
        obj = json.loads(raw)
    except ValueError as exc:  # bad JSON or bad UTF-8
        return None, f"self-report {path} is not JSON ({exc}); ignored", text
    except RecursionError:
        return None, f"self-report {path} is nested too deeply; ignored", text
    try:
        check_self_report(obj)
    except InvalidSidecar as exc:
        problem = f"self-report {path} ignored: wrong shape at {exc.path}: {exc.expected}"
        return None, problem, text
    report = {key: obj.get(key) for key in SELF_REPORT_FIELDS}
    if report["confidence"] is not None:
        report["confidence"] = float(report["confidence"])
    if all(value is None for value in report.values()):
        return None, f"self-report {path} has none of the three fields; treated as missing", text
    return report, None, None


def load_table(path: str | None) -> tuple[RiskTable, str | None]:
    """(table, problem): ``REFLECTION_RISK_TABLE``'s, or the shipped table.

    A bad file falls back to the shipped table, degraded. The parsed table is kept in the
    hooks' state folder, so only a stop after the table (or the package) changed pays for
    ``tomllib``.
    """
    cache = state_dir(os.environ)
    if path is None:
        return read_risk_table(cache_dir=cache), None
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # a FIFO would block the read
            raise OSError(f"{path} is not a regular file")
        return read_risk_table(path, cache_dir=cache), None
    except (ReflectionError, OSError, ValueError) as exc:
        problem = f"REFLECTION_RISK_TABLE unusable, shipped table used instead: {exc}"
        return read_risk_table(cache_dir=cache), problem


def ask_block(input_path: str) -> str:
    """The ask mode's one-line stdout: Claude Code's documented Stop block with a reason."""
    from agent_reflection.hooks.instructions import QUESTIONS, TEMPLATE

    asked = " ".join(f"({i}) {q}" for i, q in enumerate(QUESTIONS, 1))
    reason = (
        f"Before stopping, write a short self-report as JSON to {input_path} answering: "
        f"{asked} Shape: {json.dumps(TEMPLATE)} (confidence as a number). Then stop; you will "
        "not be asked again."
    )
    return json.dumps({"decision": "block", "reason": reason}) + "\n"


def _under(root: str, configured: str | None, default: str, name: str, problems: list[str]) -> str:
    """``configured`` (else ``default``) against the work tree ``root``. A relative setting
    that leads out of the work tree (``../escaped``) is refused for the default: only an
    absolute one names a folder outside."""
    path = os.path.expanduser(configured) if configured else default
    joined = os.path.normpath(os.path.join(root, path))
    if configured and not os.path.isabs(path) and _relative(root, joined) is None:
        problems.append(
            f"{name}={configured} leads out of the work tree {root}: {default} used instead "
            "(give an absolute path to use a folder outside the repository)"
        )
        return os.path.normpath(os.path.join(root, default))
    return joined


def _relative(root: str, path: str) -> str | None:
    """``path`` relative to ``root`` with "/" separators; None when outside it or equal to it."""
    try:
        rel = os.path.relpath(os.path.realpath(path), os.path.realpath(root))
    except ValueError:
        return None
    if rel == os.curdir or rel == os.pardir or rel.startswith(os.pardir + os.sep):
        return None
    return rel.replace(os.sep, "/")


def _is_settings_backup(path: str) -> bool:
    folder, _, name = path.rpartition("/")
    return (folder == ".claude" or folder.endswith("/.claude")) and name.startswith(
        ("settings.json.bak-", "settings.local.json.bak-")
    )
