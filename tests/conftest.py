"""Shared fixtures. ``shared_dir`` is ../shared/ beside the repo; tests that need it skip
with a clear reason when it is absent (a fresh machine without the data)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import duckdb
import pytest
from hypothesis import HealthCheck, settings

from agent_reflection.experiments.registration import Preregistration, load_preregistration

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DIR = Path(os.environ.get("AGENT_REFLECTION_SHARED", REPO_ROOT.parent / "shared"))

#: Hypothesis's per-example deadline and its too-slow health check time the machine, not the
#: code: on a loaded 2-core runner both failed tests that were right. This profile is loaded
#: here, before any test module builds its ``@settings``, so every Hypothesis test inherits it;
#: a test that passes its own ``suppress_health_check`` list must name ``too_slow`` in it too
#: (such a test fails at setup otherwise, saying so: ``pytest_collection_modifyitems`` below).
settings.register_profile("suite", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("suite")

#: A test whose setup, call and teardown together take longer than this should carry
#: ``@pytest.mark.slow`` (README: ``pytest -m "not slow"`` is the quick run).
SLOW_SECONDS = 5.0
#: Longer than this, its mark also says why the test cannot be quicker:
#: ``@pytest.mark.slow(reason="...")`` (issue 36).
SLOW_REASON_SECONDS = 30.0


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    if not (SHARED_DIR / "README.md").is_file():
        pytest.skip(
            f"../shared/ real data not present at {SHARED_DIR} (set AGENT_REFLECTION_SHARED)"
        )
    return SHARED_DIR


def run_reflect(
    *args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """``reflect ARGS`` as its own process in ``cwd`` (``env``: default this environment with
    CI set and no REFLECT_DB), its output captured; never raises on a failed command."""
    if env is None:
        env = {**os.environ, "CI": "1"}
        env.pop("REFLECT_DB", None)
    return subprocess.run(
        [sys.executable, "-m", "agent_reflection", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=timeout,
    )


def run_git(repo: Path, *args: str, env: dict[str, str] | None = None) -> str:
    """Run real git in ``repo`` with a fixed identity and clock-free config."""
    base = {
        **os.environ,
        "GIT_AUTHOR_NAME": "Test Author",
        "GIT_AUTHOR_EMAIL": "author@example.com",
        "GIT_COMMITTER_NAME": "Test Committer",
        "GIT_COMMITTER_EMAIL": "committer@example.com",
        "GIT_CONFIG_NOSYSTEM": "1",
        "HOME": str(repo),
    }
    out = subprocess.run(
        ["git", *args],
        cwd=repo,
        env={**base, **(env or {})},
        check=True,
        capture_output=True,
        text=True,
    )
    return out.stdout


@pytest.fixture
def git_repo(tmp_path: Path) -> Path:
    """An empty real git repository with one initial commit on branch ``main``."""
    repo = tmp_path / "repo"
    repo.mkdir()
    run_git(repo, "init", "-q", "-b", "main")
    (repo / "README.md").write_text("hello\n")
    run_git(repo, "add", "README.md")
    run_git(repo, "commit", "-q", "-m", "initial commit")
    return repo


@pytest.fixture(scope="session")
def szz_database(
    shared_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Callable[[tuple[str, ...], Path], Path]:
    """``szz_database(names, folder)``: a DuckDB file in ``folder`` holding the shared
    histories ``names`` loaded with SZZ, as `reflect load git --szz` loads them (real git,
    real DuckDB). Each set of names is loaded once per test process and copied for each
    caller, so a test may write to its copy."""
    import shutil

    from agent_reflection.load.git.history import load_git_history
    from agent_reflection.load.git.szz import load_fix_inducing
    from agent_reflection.store.db import connect

    built: dict[tuple[str, ...], Path] = {}

    def copy_of(names: tuple[str, ...], folder: Path) -> Path:
        if names not in built:
            where = tmp_path_factory.mktemp("szz")
            cache = where / "cache"
            con = connect(where / "template.duckdb")
            try:
                for name in names:
                    bundle = shared_dir / "data" / "git" / f"{name}.bundle"
                    load_git_history(con, bundle, name=name, cache_dir=cache)
                    load_fix_inducing(con, bundle, name=name, cache_dir=cache)
            finally:
                con.close()
            built[names] = where / "template.duckdb"
        target = folder / f"{'+'.join(names)}.duckdb"
        shutil.copyfile(built[names], target)
        return target

    return copy_of


@pytest.fixture(scope="module")
def flask_szz_con(
    szz_database: Callable[[tuple[str, ...], Path], Path],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[duckdb.DuckDBPyConnection]:
    """The shared flask history loaded with SZZ (:func:`szz_database`), once per test module."""
    from agent_reflection.store.db import connect

    con = connect(szz_database(("flask",), tmp_path_factory.mktemp("flask")))
    yield con
    con.close()


@pytest.fixture(scope="session")
def p1_small_prereg() -> Preregistration:
    """The registered file with a smallest useful AUC of 0.6 (130 rows per class; precision
    target: half-width 0.07) instead of the registered 0.55 (522; 0.035): P1's decision
    machinery is the same, the samples four times smaller."""
    registered = load_preregistration()
    p1 = replace(registered.p1, smallest_useful_auc=0.6, max_ci_half_width=0.07)
    return replace(registered, p1=p1)


def _timing_free_settings_problem(item: pytest.Item) -> str | None:
    """Why ``item``'s Hypothesis settings could fail on a slow machine, or None if they cannot."""
    test = getattr(item, "obj", None)
    if test is None or not hasattr(test, "hypothesis"):
        return None
    used = getattr(test, "_hypothesis_internal_use_settings", settings.default)
    if used.deadline is not None:
        return f"deadline={used.deadline}"
    if HealthCheck.too_slow not in used.suppress_health_check:
        return "HealthCheck.too_slow not suppressed"
    return None


def pytest_configure(config: pytest.Config) -> None:
    """The package's bytecode, written once before any test (in xdist's controller) as
    `reflect hook install` and every non-editable install write it: where
    PYTHONDONTWRITEBYTECODE is set (this machine, CI) the Python processes the suite starts
    (about 1,700) compiled our modules from source each time (bench/README.md).
    tests/test_hook_bytecode.py checks the uncompiled case on a copy of the package."""
    if not hasattr(config, "workerinput"):
        from agent_reflection.hooks.bytecode import compile_package

        compile_package()


def _slow_reason(item: pytest.Item) -> str | None:
    """The reason ``item``'s ``slow`` mark gives ("": none; None: no mark). ValueError when
    the mark takes anything but ``reason``, a non-empty text."""
    marks = list(item.iter_markers("slow"))  # the test's own first, then its class's, module's
    for mark in marks:
        if mark.args or set(mark.kwargs) - {"reason"}:
            raise ValueError("the slow mark takes only reason=...")
        reason = mark.kwargs.get("reason", "")
        if not isinstance(reason, str) or ("reason" in mark.kwargs and not reason.strip()):
            raise ValueError("the slow mark's reason is not a text")
    return marks[0].kwargs.get("reason", "") if marks else None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Put in each test's ``user_properties`` (which its reports carry to xdist's controller)
    its slow mark's reason (``slow_mark``) and why it cannot run as written (``unfit``: a bad
    slow mark, Hypothesis settings that time the machine). Such a test fails at setup with that
    text, and the run ends listing it and failing, even when the test is skipped or expected to
    fail; refusing the run at collection instead became an internal error under xdist, with the
    text lost."""
    for item in items:
        problems = []
        try:
            reason = _slow_reason(item)
        except ValueError as exc:
            problems.append(f'{exc}: @pytest.mark.slow or @pytest.mark.slow(reason="...")')
        else:
            if reason is not None:
                item.user_properties.append(("slow_mark", reason))
        settings_problem = _timing_free_settings_problem(item)
        if settings_problem is not None:
            problems.append(
                f"Hypothesis settings that time the machine ({settings_problem}): give the test "
                "deadline=None and suppress HealthCheck.too_slow, as the 'suite' profile in "
                "tests/conftest.py does"
            )
        if problems:
            item.user_properties.append(("unfit", "; ".join(problems)))


def pytest_runtest_setup(item: pytest.Item) -> None:
    unfit = dict(item.user_properties).get("unfit")
    if unfit is not None:
        pytest.fail(f"{item.nodeid}: {unfit}", pytrace=False)


#: From the reports, by test: setup, call and teardown seconds added up; the slow mark's reason
#: ("" for none; from the mark itself: ``report.keywords`` also holds node names and parameter
#: ids, so a case with the id "slow" would pass for marked); why it cannot run as written.
_seconds: dict[str, float] = {}
_slow_marks: dict[str, str] = {}
_unfit: dict[str, str] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Add up each test's setup, call and teardown time (under xdist: in the controller)."""
    _seconds[report.nodeid] = _seconds.get(report.nodeid, 0.0) + report.duration
    for name, value in report.user_properties:
        if name == "slow_mark":
            _slow_marks[report.nodeid] = value
        elif name == "unfit":
            _unfit[report.nodeid] = value


def pytest_sessionfinish(session: pytest.Session) -> None:
    """A test that cannot run as written fails the run, even if it was skipped or xfailed."""
    if _unfit and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """List tests over ``SLOW_SECONDS`` without the ``slow`` mark, and tests over
    ``SLOW_REASON_SECONDS`` whose mark gives no reason. Lists, not failures: a loaded machine
    can push a quick test over the line, and the suite must not flake on it."""
    unmarked = [n for n, s in _seconds.items() if s > SLOW_SECONDS and n not in _slow_marks]
    unexplained = [
        n for n, s in _seconds.items() if s > SLOW_REASON_SECONDS and _slow_marks.get(n) == ""
    ]
    for title, nodeids in (
        (f"tests over {SLOW_SECONDS:g} s not marked slow", unmarked),
        (f"tests over {SLOW_REASON_SECONDS:g} s whose slow mark gives no reason", unexplained),
    ):
        if nodeids:
            terminalreporter.section(title)
            for nodeid in sorted(nodeids, key=lambda n: -_seconds[n]):
                terminalreporter.write_line(f"{_seconds[nodeid]:7.1f} s  {nodeid}")
    if _unfit:
        terminalreporter.section("tests that cannot run as written (the run fails)")
        for nodeid, problem in sorted(_unfit.items()):
            terminalreporter.write_line(f"{nodeid}: {problem}")
