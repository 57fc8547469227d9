"""The real Stop hook, run as Claude Code runs it: a subprocess, JSON on stdin, in real git repos.

Acceptance cases H1–H16 (``spec``: derived from the design and the capture-kernel issue) plus
every fault the issue names. Every run asserts the hook contract: exit 0 and empty stdout.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_reflection.reflection.record import json_schema, validate_sidecar
from conftest import run_git
from hook_harness import HookRun, hook_env, load, payload, run_hook, sidecars

SCHEMA_VALIDATOR = jsonschema.Draft202012Validator(json_schema())
NAME_RE = re.compile(r"^(?P<session>[A-Za-z0-9._-]+)-\d{8}T\d{6}\.\d{3}Z(-\d+)?\.reflection\.json$")


def ok(run: HookRun) -> HookRun:
    """The contract every run must keep, whatever happened inside."""
    assert run.returncode == 0, run.stderr
    assert run.stdout == b"", run.stdout
    return run


def valid(path: Path) -> dict[str, Any]:
    record = load(path)
    SCHEMA_VALIDATOR.validate(record)
    validate_sidecar(record)
    return record


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def solo(home: Path) -> dict[str, str]:
    return hook_env(home, REFLECTION_MODE="solo")


def out_dir(repo: Path) -> Path:
    return repo / ".reflection" / "sidecars"


def only_sidecar(repo: Path) -> dict[str, Any]:
    found = sidecars(out_dir(repo))
    assert len(found) == 1, found
    return valid(found[0])


# --- H1, H2: fail-closed --------------------------------------------------------------------


@pytest.mark.spec
@pytest.mark.parametrize(
    "mode",
    [
        pytest.param(None, id="H1"),
        pytest.param("off", id="H2"),
        pytest.param("OFF", id="H2.case"),
        pytest.param("", id="H2.empty"),
        pytest.param("yes", id="H2.unknown-is-off"),
    ],
)
def test_mode_unset_or_off_writes_nothing(git_repo: Path, home: Path, mode: str | None) -> None:
    (git_repo / "src").mkdir()
    (git_repo / "src" / "auth.py").write_text("x = 1\n")
    run = ok(run_hook(payload(git_repo), hook_env(home, REFLECTION_MODE=mode), git_repo))
    assert not (git_repo / ".reflection").exists()
    if mode == "yes":
        assert "treated as off" in run.stderr


def test_install_mode_argument_applies_only_when_env_unset(git_repo: Path, home: Path) -> None:
    ok(run_hook(payload(git_repo), hook_env(home), git_repo, argv=["--mode", "solo"]))
    assert len(sidecars(out_dir(git_repo))) == 1
    env_off = hook_env(home, REFLECTION_MODE="off")
    ok(run_hook(payload(git_repo), env_off, git_repo, argv=["--mode", "solo"]))
    assert len(sidecars(out_dir(git_repo))) == 1


# --- H3, H4, H5: capture and the self-report -------------------------------------------------


@pytest.mark.spec
@pytest.mark.parametrize("mode", ["solo", "orchestrated"], ids=["H3.solo", "H3.orchestrated"])
def test_H3_clean_repo_writes_degraded_sidecar(git_repo: Path, home: Path, mode: str) -> None:
    ok(run_hook(payload(git_repo), hook_env(home, REFLECTION_MODE=mode), git_repo))
    record = only_sidecar(git_repo)
    assert record["files_changed"] == []
    assert record["risk"] == {
        "needs_review": False,
        "score": 0.0,
        "surface": "none",
        "reason": "no files changed",
    }
    assert record["provenance"] == {
        "source": "stop-hook",
        "reflection_attempt": 1,
        "degraded": True,
        "reflection_mode": mode,
        "self_report_problem": f"no self-report at {git_repo / '.reflection' / 'input.json'}; "
        "self-report fields left null",
    }
    assert record["repo"] == "repo"
    assert record["task_ref"] == "repo@main"
    assert record["agent"] == "unknown"
    assert record["session_id"] == "sess-1"
    assert (record["confidence"], record["most_likely_wrong"], record["known_not_in_diff"]) == (
        None,
        None,
        None,
    )


SELF_REPORT = {
    "confidence": 0.7,
    "most_likely_wrong": {"surface": "auth", "description": "token refresh race"},
    "known_not_in_diff": "staging has a different issuer",
}


@pytest.mark.spec
@pytest.mark.parametrize(
    "where", ["default", "env-absolute", "env-relative"], ids=["H4", "H4.env-abs", "H4.env-rel"]
)
def test_H4_self_report_merged(git_repo: Path, home: Path, tmp_path: Path, where: str) -> None:
    env = hook_env(home, REFLECTION_MODE="solo")
    if where == "default":
        target = git_repo / ".reflection" / "input.json"
    elif where == "env-absolute":
        target = tmp_path / "elsewhere" / "report.json"
        env["REFLECTION_INPUT"] = str(target)
    else:
        target = git_repo / "notes" / "report.json"
        env["REFLECTION_INPUT"] = "notes/report.json"  # relative to the repository root
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(SELF_REPORT))
    ok(run_hook(payload(git_repo), env, git_repo))
    record = only_sidecar(git_repo)
    assert {k: record[k] for k in SELF_REPORT} == SELF_REPORT
    assert record["provenance"]["degraded"] is False
    # the self-report file is the hook's input, not the agent's work
    assert "notes/report.json" not in record["files_changed"]


def test_partial_self_report_is_merged_and_not_degraded(
    git_repo: Path, solo: dict[str, str]
) -> None:
    (git_repo / ".reflection").mkdir()
    (git_repo / ".reflection" / "input.json").write_text('{"confidence": 1}')
    ok(run_hook(payload(git_repo), solo, git_repo))
    record = only_sidecar(git_repo)
    assert record["confidence"] == 1.0
    assert record["most_likely_wrong"] is None
    assert record["provenance"]["degraded"] is False


@pytest.mark.spec
@pytest.mark.parametrize(
    ("content", "named"),
    [
        pytest.param(b"{not json", "not JSON", id="H5.syntax"),
        pytest.param(b"[0.5]", "/", id="H5.array"),
        pytest.param(b'{"confidence": 1.5}', "/confidence", id="H5.range"),
        pytest.param(b'{"confidence": 0.5, "mood": "ok"}', "/mood", id="H5.unknown-field"),
        pytest.param(
            b'{"most_likely_wrong": {"surface": "security", "description": "x"}}',
            "/most_likely_wrong/surface",
            id="H5.surface",
        ),
        pytest.param(b"\xff\xfe\x00garbage", "self-report", id="H5.binary"),
        pytest.param(b"{}", "none of the three", id="H5.empty-object"),
        pytest.param(b"[" * 100_000, "self-report", id="H5.deep-nesting"),
    ],
)
def test_H5_malformed_self_report(
    git_repo: Path, solo: dict[str, str], content: bytes, named: str
) -> None:
    (git_repo / ".reflection").mkdir()
    (git_repo / ".reflection" / "input.json").write_bytes(content)
    run = ok(run_hook(payload(git_repo), solo, git_repo))
    record = only_sidecar(git_repo)
    assert (record["confidence"], record["most_likely_wrong"], record["known_not_in_diff"]) == (
        None,
        None,
        None,
    )
    assert record["provenance"]["degraded"] is True
    assert named in run.stderr


def test_self_report_path_is_a_directory(git_repo: Path, solo: dict[str, str]) -> None:
    (git_repo / ".reflection" / "input.json").mkdir(parents=True)
    ok(run_hook(payload(git_repo), solo, git_repo))
    assert only_sidecar(git_repo)["provenance"]["degraded"] is True


# --- H6: the lock sentinel -------------------------------------------------------------------


@pytest.mark.spec
def test_H6_lock_present_writes_nothing(git_repo: Path, solo: dict[str, str]) -> None:
    out_dir(git_repo).mkdir(parents=True)
    lock = out_dir(git_repo) / "sess-1.lock"
    lock.write_text("12345\n")
    run = ok(run_hook(payload(git_repo), solo, git_repo))
    assert sidecars(out_dir(git_repo)) == []
    assert lock.read_text() == "12345\n", "another run's lock must not be removed"
    assert "skipped" in run.stderr
    # another session is not blocked by this session's lock
    ok(run_hook(payload(git_repo, session="sess-2"), solo, git_repo))
    assert len(sidecars(out_dir(git_repo))) == 1


def test_stale_lock_is_taken_over(git_repo: Path, solo: dict[str, str]) -> None:
    out_dir(git_repo).mkdir(parents=True)
    lock = out_dir(git_repo) / "sess-1.lock"
    lock.write_text("1\n")
    old = time.time() - 3600
    os.utime(lock, (old, old))
    ok(run_hook(payload(git_repo), solo, git_repo))
    assert len(sidecars(out_dir(git_repo))) == 1
    assert not lock.exists()


def test_lock_removed_after_every_run(git_repo: Path, solo: dict[str, str], tmp_path: Path) -> None:
    (git_repo / ".reflection").mkdir()
    (git_repo / ".reflection" / "input.json").write_text("{bad")
    table = tmp_path / "bad.toml"
    table.write_text("threshold = 7\n")
    solo["REFLECTION_RISK_TABLE"] = str(table)
    for _ in range(2):
        ok(run_hook(payload(git_repo), solo, git_repo))
    assert len(sidecars(out_dir(git_repo))) == 2  # the second stop was not blocked by a lock
    assert not list(out_dir(git_repo).glob("*.lock"))
    assert not list(out_dir(git_repo).glob(".*"))  # no temp file left behind


@pytest.mark.spec
def test_H6_symlink_planted_at_lock_path(
    git_repo: Path, solo: dict[str, str], tmp_path: Path
) -> None:
    out_dir(git_repo).mkdir(parents=True)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    (out_dir(git_repo) / "sess-1.lock").symlink_to(victim)
    dangling = out_dir(git_repo) / "sess-2.lock"
    dangling.symlink_to(tmp_path / "would-be-created")
    ok(run_hook(payload(git_repo), solo, git_repo))
    ok(run_hook(payload(git_repo, session="sess-2"), solo, git_repo))
    assert victim.read_text() == "precious\n"
    assert not (tmp_path / "would-be-created").exists()
    assert sidecars(out_dir(git_repo)) == []


# --- H7: stop_hook_active --------------------------------------------------------------------


@pytest.mark.spec
@pytest.mark.parametrize("ask", [None, "1"], ids=["H7", "H7.ask-on-nothing-pending"])
def test_H7_stop_hook_active_returns_at_once(git_repo: Path, home: Path, ask: str | None) -> None:
    env = hook_env(home, REFLECTION_MODE="solo", REFLECTION_ASK=ask)
    ok(run_hook(payload(git_repo, stop_hook_active=True), env, git_repo))
    assert sidecars(out_dir(git_repo)) == []


@pytest.mark.parametrize("flag", ["true", 1, None, "yes"])
def test_only_a_json_true_counts_as_active(git_repo: Path, solo: dict[str, str], flag: Any) -> None:
    ok(run_hook(payload(git_repo, stop_hook_active=flag), solo, git_repo))
    assert len(sidecars(out_dir(git_repo))) == 1


# --- H8, H9: the session id ------------------------------------------------------------------


@pytest.mark.spec
@pytest.mark.parametrize(
    ("session", "stem"),
    [
        pytest.param("../../etc/x", "_etc_x", id="H8"),
        pytest.param("/abs/path", "_abs_path", id="H8.absolute"),
        pytest.param("..", "unknown", id="H8.dotdot"),
        pytest.param("a\\b\x00c d", "a_b_c_d", id="H8.separators"),
        pytest.param("x" * 300, "x" * 64, id="H8.bounded"),
        pytest.param("sess-ü", "sess-_", id="H8.non-ascii"),
    ],
)
def test_H8_session_id_sanitised(
    tmp_path: Path, git_repo: Path, solo: dict[str, str], home: Path, session: str, stem: str
) -> None:
    before = {p for p in tmp_path.rglob("*") if ".git" not in p.parts}
    ok(run_hook(payload(git_repo, session=session), solo, git_repo))
    [path] = sidecars(out_dir(git_repo))
    match = NAME_RE.match(path.name)
    assert match and match["session"] == stem
    assert path.parent == out_dir(git_repo)
    created = {p for p in tmp_path.rglob("*") if ".git" not in p.parts} - before
    out, state = out_dir(git_repo), home / ".cache" / "agent-reflection"
    # Besides the sidecar, only the parsed risk table in the hooks' state folder.
    kept = {p for p in created if state in p.parents or p in state.parents or p == state}
    assert [p.name for p in kept if p.is_file()] == [next(state.glob("risk-table-*.json")).name]
    outside = [p for p in created - kept if not (p == out or out in p.parents or p in out.parents)]
    assert outside == []
    assert valid(path)["session_id"] == session[:256]


@pytest.mark.spec
@pytest.mark.parametrize(
    "session", [None, "", 42, ["x"]], ids=["H9", "H9.empty", "H9.number", "H9.list"]
)
def test_H9_session_id_missing_is_unknown(
    git_repo: Path, solo: dict[str, str], session: Any
) -> None:
    event = payload(git_repo, session=None)
    if session is not None:
        event["session_id"] = session
    ok(run_hook(event, solo, git_repo))
    [path] = sidecars(out_dir(git_repo))
    assert path.name.startswith("unknown-")
    assert valid(path)["session_id"] == "unknown"


# --- H10: garbage stdin (our pick: write a degraded sidecar from the hook's cwd) --------------


@pytest.mark.spec
@pytest.mark.parametrize(
    "stdin",
    [b"", b"not json at all", b"\xff\xfe\xfd", b"[1, 2]", b'"a string"', b"null", b"[" * 100_000],
    ids=["H10.empty", "H10.text", "H10.binary", "H10.array", "H10.string", "H10.null", "H10.deep"],
)
def test_H10_garbage_stdin_writes_degraded(
    git_repo: Path, solo: dict[str, str], stdin: bytes
) -> None:
    (git_repo / "src").mkdir()
    (git_repo / "src" / "login.ts").write_text("x\n")
    ok(run_hook(stdin, solo, git_repo))
    record = only_sidecar(git_repo)
    assert record["session_id"] == "unknown"
    assert record["provenance"]["degraded"] is True
    assert record["files_changed"] == ["src/login.ts"]  # the hook's cwd is still the repo


# --- H11: outside git, git missing -----------------------------------------------------------


@pytest.mark.spec
def test_H11_not_a_git_repo_writes_nothing(tmp_path: Path, solo: dict[str, str]) -> None:
    """Outside a work tree and without REFLECTION_DIR the hook leaves the folder untouched."""
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "auth.py").write_text("x\n")
    solo["GIT_CEILING_DIRECTORIES"] = str(tmp_path)
    run = ok(run_hook(payload(plain), solo, plain))
    assert sorted(p.name for p in plain.iterdir()) == ["auth.py"]
    assert "not a git work tree" in run.stderr
    assert "nothing written" in run.stderr


@pytest.mark.spec
def test_H11_not_a_git_repo_with_absolute_reflection_dir(
    tmp_path: Path, solo: dict[str, str]
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "auth.py").write_text("x\n")
    sink = tmp_path / "sink"
    solo["GIT_CEILING_DIRECTORIES"] = str(tmp_path)
    solo["REFLECTION_DIR"] = str(sink)
    ok(run_hook(payload(plain), solo, plain))
    [path] = sidecars(sink)
    record = valid(path)
    assert record["provenance"]["degraded"] is True
    assert record["files_changed"] == []
    assert record["repo"] == "plain"
    assert record["task_ref"] == "plain@unknown"
    assert sorted(p.name for p in plain.iterdir()) == ["auth.py"]


@pytest.mark.spec
def test_H11_git_missing(git_repo: Path, solo: dict[str, str], tmp_path: Path) -> None:
    empty_bin = tmp_path / "empty-bin"
    empty_bin.mkdir()
    solo["PATH"] = str(empty_bin)  # the hook is started by absolute path; git cannot be found
    run = ok(run_hook(payload(git_repo), solo, git_repo))
    record = only_sidecar(git_repo)
    assert record["provenance"]["degraded"] is True
    assert record["repo"] == "repo"
    assert "git is not installed" in run.stderr


def test_git_failing_midway_still_writes(
    git_repo: Path, solo: dict[str, str], tmp_path: Path
) -> None:
    """A git that answers rev-parse but fails status (e.g. a corrupt index)."""
    (git_repo / ".git" / "index").write_bytes(b"garbage index")
    run = ok(run_hook(payload(git_repo), solo, git_repo))
    record = only_sidecar(git_repo)
    assert record["provenance"]["degraded"] is True
    assert "status" in run.stderr


# --- H12: an output folder that cannot be written --------------------------------------------
# The tests run as root, for whom chmod 0o500 does not stop a write. Two places refuse even
# root: a path under a regular file (ENOTDIR) and a new folder inside /proc (procfs).


@pytest.mark.spec
@pytest.mark.parametrize("kind", ["H12.under-a-file", "H12.procfs"])
def test_H12_unwritable_output_dir(
    git_repo: Path, solo: dict[str, str], tmp_path: Path, kind: str
) -> None:
    if kind == "H12.procfs":
        if not Path("/proc/self").is_dir():
            pytest.skip("no /proc on this system")
        target = "/proc/reflection-test/sidecars"
    else:
        blocker = tmp_path / "a-file"
        blocker.write_text("x")
        target = str(blocker / "sidecars")
    solo["REFLECTION_DIR"] = target
    run = ok(run_hook(payload(git_repo), solo, git_repo))
    assert "nothing written" in run.stderr
    assert not (git_repo / ".reflection").exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores file modes")
def test_H12_read_only_dir_as_normal_user(git_repo: Path, solo: dict[str, str]) -> None:
    out_dir(git_repo).mkdir(parents=True)
    out_dir(git_repo).chmod(0o500)
    try:
        ok(run_hook(payload(git_repo), solo, git_repo))
        assert sidecars(out_dir(git_repo)) == []
    finally:
        out_dir(git_repo).chmod(0o700)


# --- H13: changes only in the output folder --------------------------------------------------


@pytest.mark.spec
def test_H13_diff_only_in_output_folder(git_repo: Path, solo: dict[str, str]) -> None:
    ok(run_hook(payload(git_repo, session="first"), solo, git_repo))  # leaves an untracked sidecar
    (git_repo / ".reflection" / "input.json").write_text(json.dumps({"confidence": 0.5}))
    ok(run_hook(payload(git_repo, session="second"), solo, git_repo))
    found = sidecars(out_dir(git_repo))
    assert len(found) == 2
    second = valid(next(p for p in found if p.name.startswith("second-")))
    assert second["files_changed"] == []
    assert second["risk"]["surface"] == "none"


def test_H13_custom_output_dir_inside_repo_is_excluded(
    git_repo: Path, solo: dict[str, str]
) -> None:
    solo["REFLECTION_DIR"] = "notes/reflections"
    (git_repo / "notes").mkdir()
    (git_repo / "notes" / "keep.md").write_text("x\n")
    ok(run_hook(payload(git_repo, session="a"), solo, git_repo))
    ok(run_hook(payload(git_repo, session="b"), solo, git_repo))
    second = valid(next((git_repo / "notes" / "reflections").glob("b-*.reflection.json")))
    assert second["files_changed"] == ["notes/keep.md"]
    assert second["risk"]["surface"] == "docs"


# --- H14: atomic writes ----------------------------------------------------------------------


@pytest.mark.spec
def test_H14_reader_never_sees_a_partial_sidecar(git_repo: Path, solo: dict[str, str]) -> None:
    """A reader polling the folder while hooks write only ever finds complete JSON."""
    reader = subprocess.Popen(
        [sys.executable, "-c", READER, str(out_dir(git_repo))],
        stdout=subprocess.PIPE,
        text=True,
    )
    for i in range(4):
        ok(run_hook(payload(git_repo, session=f"s{i}"), solo, git_repo))
    (out_dir(git_repo) / "STOP").write_text("")
    seen, _ = reader.communicate(timeout=30)
    assert int(seen) >= 1, "the reader saw no sidecar at all"
    assert len(sidecars(out_dir(git_repo))) == 4
    assert sorted(p.name for p in out_dir(git_repo).iterdir()) == sorted(
        [p.name for p in sidecars(out_dir(git_repo))] + ["STOP"]
    )  # no temp file or lock left


READER = """
import json, pathlib, sys
folder = pathlib.Path(sys.argv[1]); seen = set()
while not (folder / "STOP").exists():
    if folder.is_dir():
        for p in folder.glob("*.reflection.json"):
            json.loads(p.read_text())  # raises (and the test fails) on a partial file
            seen.add(p.name)
print(len(seen))
"""


# --- H15: stdout -----------------------------------------------------------------------------


@pytest.mark.spec
def test_H15_stdout_empty_even_when_the_environment_is_noisy(
    git_repo: Path, solo: dict[str, str]
) -> None:
    solo["PYTHONWARNINGS"] = "always"
    solo["PYTHONVERBOSE"] = "1"  # import chatter goes to stderr, never stdout
    run = ok(run_hook(payload(git_repo), solo, git_repo))
    assert b"decision" not in run.stdout
    assert len(sidecars(out_dir(git_repo))) == 1


# --- H16: the file name and folder -----------------------------------------------------------


@pytest.mark.spec
@pytest.mark.parametrize(
    "where", ["H16.default", "H16.env-absolute", "H16.env-relative", "H16.env-home"]
)
def test_H16_filename_and_folder(git_repo: Path, home: Path, tmp_path: Path, where: str) -> None:
    env = hook_env(home, REFLECTION_MODE="solo")
    expected = {
        "H16.default": out_dir(git_repo),
        "H16.env-absolute": tmp_path / "central" / "sidecars",
        "H16.env-relative": git_repo / "var" / "refl",
        "H16.env-home": home / "refl",
    }[where]
    if where == "H16.env-absolute":
        env["REFLECTION_DIR"] = str(expected)
    elif where == "H16.env-relative":
        env["REFLECTION_DIR"] = "var/refl"
    elif where == "H16.env-home":
        env["REFLECTION_DIR"] = "~/refl"
    ok(run_hook(payload(git_repo, session="0f1e2d3c-aaaa-bbbb"), env, git_repo))
    [path] = sidecars(expected)
    match = NAME_RE.match(path.name)
    assert match and match["session"] == "0f1e2d3c-aaaa-bbbb"
    record = valid(path)
    stamp = path.name[len("0f1e2d3c-aaaa-bbbb-") : -len(".reflection.json")]
    assert record["timestamp"].replace("-", "").replace(":", "") == stamp


def test_two_stops_in_the_same_millisecond_keep_both(git_repo: Path, solo: dict[str, str]) -> None:
    """Names never collide silently: a taken name gets a -N suffix instead of being replaced."""
    for _ in range(3):
        ok(run_hook(payload(git_repo), solo, git_repo))
    names = [p.name for p in sidecars(out_dir(git_repo))]
    assert len(names) == 3 and all(NAME_RE.match(n) for n in names)


# --- mechanical fields -----------------------------------------------------------------------


def commit_all(repo: Path, message: str) -> None:
    run_git(repo, "add", "-A")
    run_git(repo, "commit", "-q", "-m", message)


def test_files_changed_is_the_union_of_every_kind_of_change(
    git_repo: Path, solo: dict[str, str]
) -> None:
    (git_repo / "docs").mkdir()
    for name in ("docs/guide.md", "old_name.py", "unstaged.py", "deleted.py"):
        (git_repo / name).write_text(f"{name}\n")
    commit_all(git_repo, "base")
    run_git(git_repo, "branch", "-M", "main")
    run_git(git_repo, "checkout", "-q", "-b", "feature")
    (git_repo / "committed.py").write_text("c\n")
    commit_all(git_repo, "work on the feature")
    (git_repo / "staged.py").write_text("s\n")
    run_git(git_repo, "add", "staged.py")
    (git_repo / "unstaged.py").write_text("changed\n")
    run_git(git_repo, "mv", "old_name.py", "new name.py")
    (git_repo / "deleted.py").unlink()
    (git_repo / "untracked" / "deep").mkdir(parents=True)
    (git_repo / "untracked" / "deep" / "file.txt").write_text("u\n")
    (git_repo / ".gitignore").write_text("ignored.log\n")
    (git_repo / "ignored.log").write_text("i\n")
    ok(run_hook(payload(git_repo), solo, git_repo))
    record = only_sidecar(git_repo)
    assert record["files_changed"] == sorted(
        [
            ".gitignore",
            "committed.py",
            "deleted.py",
            "new name.py",
            "old_name.py",
            "staged.py",
            "unstaged.py",
            "untracked/deep/file.txt",
        ]
    )
    assert record["task_ref"] == "repo@feature"


def test_committed_changes_counted_against_the_upstream(tmp_path: Path, home: Path) -> None:
    origin = tmp_path / "origin"
    origin.mkdir()
    run_git(origin, "init", "-q", "-b", "main")
    (origin / "base.txt").write_text("b\n")
    commit_all(origin, "base")
    run_git(origin, "checkout", "-q", "--detach")  # so the clone may push to main
    clone = tmp_path / "clone"
    run_git(tmp_path, "clone", "-q", str(origin), str(clone))
    env = hook_env(home, REFLECTION_MODE="solo")
    ok(run_hook(payload(clone, session="before"), env, clone))
    (clone / "src" / "auth").mkdir(parents=True)
    (clone / "src" / "auth" / "jwt.ts").write_text("x\n")
    commit_all(clone, "unpushed auth work")
    ok(run_hook(payload(clone, session="after"), env, clone))
    by_session = {valid(p)["session_id"]: valid(p) for p in sidecars(out_dir(clone))}
    assert by_session["before"]["files_changed"] == []
    after = by_session["after"]
    assert after["files_changed"] == ["src/auth/jwt.ts"]
    assert after["risk"]["surface"] == "auth" and after["risk"]["needs_review"] is True
    assert "src/auth/jwt.ts" in after["risk"]["reason"]
    run_git(clone, "push", "-q", "origin", "main")
    ok(run_hook(payload(clone, session="pushed"), env, clone))
    pushed = next(valid(p) for p in sidecars(out_dir(clone)) if p.name.startswith("pushed-"))
    assert pushed["files_changed"] == []


def test_payload_cwd_in_a_subfolder_finds_the_root(
    git_repo: Path, solo: dict[str, str], tmp_path: Path
) -> None:
    (git_repo / "pkg" / "sub").mkdir(parents=True)
    (git_repo / "pkg" / "sub" / "schema.sql").write_text("create table t();\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    ok(run_hook(payload(git_repo / "pkg" / "sub"), solo, elsewhere))
    record = only_sidecar(git_repo)
    assert record["files_changed"] == ["pkg/sub/schema.sql"]
    assert record["risk"]["surface"] == "data"


def test_identity_from_environment(git_repo: Path, solo: dict[str, str]) -> None:
    solo.update(REFLECTION_TASK_REF="PROJ-42", REFLECTION_AGENT="backend-dev")
    ok(run_hook(payload(git_repo), solo, git_repo))
    record = only_sidecar(git_repo)
    assert (record["task_ref"], record["agent"]) == ("PROJ-42", "backend-dev")


def test_detached_head_task_ref_uses_the_commit(git_repo: Path, solo: dict[str, str]) -> None:
    head = run_git(git_repo, "rev-parse", "HEAD").strip()
    run_git(git_repo, "checkout", "-q", "--detach")
    ok(run_hook(payload(git_repo), solo, git_repo))
    assert only_sidecar(git_repo)["task_ref"] == f"repo@{head[:12]}"


def test_repo_without_commits(tmp_path: Path, solo: dict[str, str]) -> None:
    repo = tmp_path / "fresh"
    repo.mkdir()
    run_git(repo, "init", "-q", "-b", "trunk")
    (repo / "Dockerfile").write_text("FROM scratch\n")
    ok(run_hook(payload(repo), solo, repo))
    record = only_sidecar(repo)
    assert record["files_changed"] == ["Dockerfile"]
    assert record["risk"]["surface"] == "infra"
    assert record["task_ref"] == "fresh@trunk"


# --- the risk table override -----------------------------------------------------------------


def test_risk_table_override(git_repo: Path, solo: dict[str, str], tmp_path: Path) -> None:
    table = tmp_path / "risk.toml"
    table.write_text('threshold = 0.3\n[[surface]]\nname = "ui"\nglobs = ["*.vue"]\n')
    solo["REFLECTION_RISK_TABLE"] = str(table)
    (git_repo / "App.vue").write_text("<template/>\n")
    (git_repo / ".reflection").mkdir()
    (git_repo / ".reflection" / "input.json").write_text('{"confidence": 0.9}')
    ok(run_hook(payload(git_repo), solo, git_repo))
    record = only_sidecar(git_repo)
    assert record["risk"]["surface"] == "ui"
    assert record["risk"]["needs_review"] is True  # 0.4 >= the table's 0.3
    assert record["provenance"]["degraded"] is False


@pytest.mark.parametrize(
    "content",
    ["threshold = 2\n", "not toml [", None, '[[surface]]\nname = "ui"\npatterns = [".vue"]\n'],
    ids=["range", "syntax", "missing", "old-substring-format"],
)
def test_bad_risk_table_falls_back_degraded(
    git_repo: Path, solo: dict[str, str], tmp_path: Path, content: str | None
) -> None:
    table = tmp_path / "risk.toml"
    if content is not None:
        table.write_text(content)
    solo["REFLECTION_RISK_TABLE"] = str(table)
    (git_repo / "App.vue").write_text("<template/>\n")
    (git_repo / "login.py").write_text("x\n")
    (git_repo / ".reflection").mkdir()
    (git_repo / ".reflection" / "input.json").write_text('{"confidence": 0.9}')
    run = ok(run_hook(payload(git_repo), solo, git_repo))
    record = only_sidecar(git_repo)
    assert record["risk"]["surface"] == "auth"  # the shipped table
    assert record["provenance"]["degraded"] is True
    assert "REFLECTION_RISK_TABLE" in run.stderr


# --- imports: the hook stays stdlib-only ------------------------------------------------------

HEAVY = ("pandas", "numpy", "duckdb", "click", "jsonschema", "scipy", "sklearn", "tqdm", "yaml")


def test_hook_imports_only_the_standard_library(git_repo: Path, solo: dict[str, str]) -> None:
    (git_repo / ".reflection").mkdir()
    (git_repo / ".reflection" / "input.json").write_text(json.dumps(SELF_REPORT))
    ok(run_hook(payload(git_repo, session="first"), solo, git_repo))  # parses the table once
    solo["PYTHONPROFILEIMPORTTIME"] = "1"
    run = ok(run_hook(payload(git_repo), solo, git_repo))
    imported = {
        line.rsplit("|", 1)[1].strip()
        for line in run.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }
    assert "agent_reflection.hooks.capture" in imported  # the profile recorded the capture path
    top_level = {name.split(".")[0] for name in imported}
    assert not top_level & set(HEAVY), sorted(top_level & set(HEAVY))
    ours = {n for n in imported if n.startswith("agent_reflection.")}
    allowed = {
        "agent_reflection.reflection",  # the package: a docstring, no imports
        "agent_reflection.reflection.checks",
        "agent_reflection.reflection.fields",
        "agent_reflection.reflection.risk_floor",
        "agent_reflection.errors",
        "agent_reflection.config",  # the settings' one home (os only at import)
        "agent_reflection.redact",  # the self-report is redacted at capture (issue 34)
        "agent_reflection.names",  # a name's text for the record (os only)
    }
    assert {n for n in ours if not n.startswith("agent_reflection.hooks")} <= allowed
    assert "agent_reflection.hooks.settings" not in ours
    # Start-up is most of a stop's cost: none of these on the capture path (shipped table, as
    # parsed by the first stop). json (with re, enum, collections) reads the session's start
    # record, as it reads every hook's JSON: the console script pip 23.2 writes imports re
    # before any hook runs anyway.
    assert "json" in top_level
    slow = {
        "typing",
        "dataclasses",
        "inspect",
        "tomllib",
        "pathlib",
    }
    assert not top_level & slow, sorted(top_level & slow)
    assert len(sidecars(out_dir(git_repo))) == 2


def test_sidecar_text_is_exactly_what_the_typed_model_writes(
    git_repo: Path, solo: dict[str, str]
) -> None:
    # The hook writes a checked dict, not the Reflection dataclass: same bytes all the same.
    (git_repo / ".reflection").mkdir()
    report = {**SELF_REPORT, "confidence": 1, "known_not_in_diff": 'é ✓ \u2028 "q"'}
    (git_repo / ".reflection" / "input.json").write_text(json.dumps(report))
    (git_repo / "src").mkdir()
    (git_repo / "src" / "login ü.py").write_text("x = 1\n")
    ok(run_hook(payload(git_repo), solo, git_repo))
    text = sidecars(out_dir(git_repo))[0].read_text("utf-8")
    assert text == validate_sidecar(json.loads(text)).to_json() + "\n"
    assert json.loads(text)["confidence"] == 1.0 and "1.0" in text


def test_only_a_changed_risk_table_is_parsed_with_tomllib(
    git_repo: Path, solo: dict[str, str], tmp_path: Path
) -> None:
    table = tmp_path / "table.toml"
    table.write_text("threshold = 0.95\n")
    (git_repo / "login.py").write_text("x = 1\n")
    solo["PYTHONPROFILEIMPORTTIME"] = "1"
    solo["REFLECTION_RISK_TABLE"] = str(table)

    def stop(session: str) -> tuple[str, dict[str, Any]]:
        run = ok(run_hook(payload(git_repo, session=session), solo, git_repo))
        (found,) = [p for p in sidecars(out_dir(git_repo)) if p.name.startswith(session)]
        return run.stderr, load(found)

    stderr, record = stop("one")
    assert "tomllib" in stderr  # the first stop parses the user's table (and the shipped one)
    assert record["risk"]["needs_review"] is True  # auth 1.0 >= the user's 0.95
    assert "at 0.95" in record["risk"]["reason"]
    stderr, record = stop("two")
    assert "tomllib" not in stderr and "at 0.95" in record["risk"]["reason"]  # kept parsed
    table.write_text("threshold = 1.0\n")
    stderr, record = stop("three")
    assert "tomllib" in stderr and "at 1" in record["risk"]["reason"]  # changed: read afresh


def test_python_dash_m_entry_point(git_repo: Path, solo: dict[str, str]) -> None:
    command = [sys.executable, "-m", "agent_reflection.hooks.stop"]
    ok(run_hook(payload(git_repo), solo, git_repo, command=command))
    assert len(sidecars(out_dir(git_repo))) == 1


def test_help_goes_to_stderr(git_repo: Path, solo: dict[str, str]) -> None:
    run = ok(run_hook(b"", solo, git_repo, argv=["--help"]))
    assert "REFLECTION_MODE" in run.stderr
    assert sidecars(out_dir(git_repo)) == []


def test_git_is_on_path() -> None:
    assert shutil.which("git"), "these tests need a real git"


# --- property: whatever arrives on stdin, the contract holds ----------------------------------

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


def stop_events(repo: Path) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {},
        optional={
            "session_id": st.text(max_size=80) | JSON_VALUES,
            "cwd": st.sampled_from([str(repo), str(repo / "missing"), "", 7, None]),
            "stop_hook_active": JSON_VALUES,
            "hook_event_name": JSON_VALUES,
            "transcript_path": JSON_VALUES,
            "last_assistant_message": st.text(max_size=200),
        },
    ).flatmap(
        lambda event: st.dictionaries(st.text(max_size=8), JSON_VALUES, max_size=3).map(
            lambda extra: {**extra, **event}
        )
    )


@pytest.mark.slow
@settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_property_any_stdin_exit_0_empty_stdout_valid_sidecar(
    git_repo: Path, home: Path, tmp_path: Path, data: st.DataObject
) -> None:
    sink = tmp_path / "sink"  # an absolute REFLECTION_DIR: a fuzzed cwd can never write elsewhere
    env = hook_env(home, REFLECTION_MODE="solo", REFLECTION_DIR=str(sink))
    stdin = data.draw(
        st.binary(max_size=300)
        | stop_events(git_repo).map(lambda e: json.dumps(e).encode())
        | JSON_VALUES.map(lambda v: json.dumps(v).encode()),
        label="stdin",
    )
    before = set(sidecars(sink))
    ok(run_hook(stdin, env, git_repo))
    new = set(sidecars(sink)) - before
    assert len(new) <= 1
    for path in new:
        record = valid(path)
        assert NAME_RE.match(path.name)
        assert record["provenance"]["reflection_mode"] == "solo"
    assert not list(sink.glob("*.lock")) if sink.is_dir() else True


def test_off_path_imports_almost_nothing(git_repo: Path, home: Path) -> None:
    """A globally registered hook runs on every stop of every project: off must stay cheap."""
    env = hook_env(home, PYTHONPROFILEIMPORTTIME="1")
    run = ok(run_hook(payload(git_repo), env, git_repo))
    imported = {
        line.rsplit("|", 1)[1].strip()
        for line in run.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }
    assert "agent_reflection.hooks.stop" in imported
    assert not imported & {
        "json",
        "dataclasses",
        "typing",
        "subprocess",
        "agent_reflection.reflection.record",
    }


@pytest.mark.spec
def test_H14_symlink_planted_at_the_sidecar_name(
    git_repo: Path, solo: dict[str, str], tmp_path: Path
) -> None:
    """Symlinks at every name the sidecar could take in the next 20 s: none is followed."""
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    folder = tmp_path / "out"  # outside the repo: git status need not list 20,000 links
    folder.mkdir()
    solo["REFLECTION_DIR"] = str(folder)
    start_ms = time.time_ns() // 1_000_000
    for ms in range(start_ms, start_ms + 20_000):
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(ms // 1000)) + f".{ms % 1000:03d}Z"
        (folder / f"sess-1-{stamp}.reflection.json").symlink_to(victim)
    ok(run_hook(payload(git_repo), solo, git_repo))
    written = [p for p in folder.glob("*.reflection.json") if not p.is_symlink()]
    assert len(written) == 1
    assert written[0].name.endswith("-1.reflection.json"), "the planted name was skipped"
    assert victim.read_text() == "precious\n"
    valid(written[0])


@pytest.mark.parametrize("which", ["self-report", "risk-table"])
def test_a_fifo_input_never_hangs_the_hook(
    git_repo: Path, solo: dict[str, str], tmp_path: Path, which: str
) -> None:
    fifo = tmp_path / "input.fifo"
    os.mkfifo(fifo)
    solo["REFLECTION_INPUT" if which == "self-report" else "REFLECTION_RISK_TABLE"] = str(fifo)
    run = ok(run_hook(payload(git_repo), solo, git_repo))  # run_hook times out after 60 s
    assert "not a regular file" in run.stderr
    assert only_sidecar(git_repo)["provenance"]["degraded"] is True
