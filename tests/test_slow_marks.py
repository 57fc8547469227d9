"""The suite's own bookkeeping of slow tests (tests/conftest.py), run on a small suite of its
own in a real pytest process, in one process and under xdist (whose controller writes the
summary from the workers' reports): a test over ``SLOW_SECONDS`` without the ``slow`` mark is
listed, so is one over ``SLOW_REASON_SECONDS`` whose mark gives no reason, and a test whose
mark is malformed, or whose Hypothesis settings time the machine, fails saying why. The
thresholds are lowered there so that 0.3 s of sleep, in a test's body or in its fixture's
setup and teardown, crosses both; the markers are pyproject.toml's, under
``--strict-markers``."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

from conftest import REPO_ROOT

SUITE_CONFTEST = REPO_ROOT / "tests" / "conftest.py"
MARKERS = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text("utf-8"))["tool"]["pytest"][
    "ini_options"
]["markers"]
PLUGIN = f"""
import importlib.util

_spec = importlib.util.spec_from_file_location("suite_conftest", {str(SUITE_CONFTEST)!r})
suite = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(suite)
suite.SLOW_SECONDS = suite.SLOW_REASON_SECONDS = 0.2
pytest_collection_modifyitems = suite.pytest_collection_modifyitems
pytest_runtest_setup = suite.pytest_runtest_setup
pytest_runtest_logreport = suite.pytest_runtest_logreport
pytest_sessionfinish = suite.pytest_sessionfinish
pytest_terminal_summary = suite.pytest_terminal_summary


def pytest_configure(config):
    for line in {MARKERS!r}:
        config.addinivalue_line("markers", line)
"""

TESTS = """
import time

import pytest


@pytest.fixture
def pause():
    time.sleep(0.15)
    yield
    time.sleep(0.15)


def test_quick():
    pass


def test_unmarked_and_slow(pause):
    pass


@pytest.mark.parametrize("speed", ["slow"])
def test_unmarked_with_a_slow_id(speed):
    time.sleep(0.3)


@pytest.mark.slow
def test_marked_without_a_reason(pause):
    pass


@pytest.mark.slow(reason="sleeps on purpose")
def test_marked_with_a_reason():
    time.sleep(0.3)
"""

MODULE_MARKED = """
import time

import pytest

pytestmark = pytest.mark.slow(reason="the whole module sleeps")


def test_in_a_marked_module():
    time.sleep(0.3)
"""

BAD_MARKS = """
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies


@pytest.fixture
def costly():
    Path("fixture-built").touch()


@settings(deadline=200)
@given(strategies.integers())
def test_timed(number):
    pass


@pytest.mark.slow("a positional reason")
def test_positional(costly):
    pass


@pytest.mark.xfail(reason="known")
@pytest.mark.slow(reason="")
def test_expected_to_fail():
    assert False


@pytest.mark.skip(reason="not here")
@pytest.mark.slow(reason=1)
def test_skipped():
    pass


@pytest.mark.slow(reason=" ")
def test_blank():
    pass


@pytest.mark.slow(reason="fine")
def test_fine():
    pass
"""

WORKERS = pytest.mark.parametrize(
    "workers",
    [
        pytest.param([], id="one process"),
        pytest.param(["-n", "2"], id="xdist", marks=pytest.mark.slow),  # 2-5 s: two workers
    ],
)


def run_suite(folder: Path, *args: str, **modules: str) -> subprocess.CompletedProcess[str]:
    (folder / "conftest.py").write_text(textwrap.dedent(PLUGIN))
    for name, text in modules.items():
        (folder / f"{name}.py").write_text(textwrap.dedent(text))
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rE"]
    return subprocess.run(
        [*command, "--strict-markers", *args],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def section(output: str, title: str) -> list[str]:
    """The tests listed under ``title`` in the terminal summary, sorted."""
    lines = output.splitlines()
    start = next((i for i, line in enumerate(lines) if title in line), None)
    if start is None:
        return []
    names = []
    for line in lines[start + 1 :]:
        if "::" not in line or line.startswith("="):
            break
        names.append(line.split("::", 1)[1])
    return sorted(names)


@WORKERS
def test_slow_tests_without_the_mark_or_its_reason_are_listed(
    tmp_path: Path, workers: list[str]
) -> None:
    done = run_suite(tmp_path, *workers, test_small=TESTS, test_module_mark=MODULE_MARKED)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "6 passed" in done.stdout
    assert section(done.stdout, "s not marked slow") == [
        "test_unmarked_and_slow",  # its fixture's setup and teardown count
        "test_unmarked_with_a_slow_id[slow]",  # an id is not a mark
    ]
    assert section(done.stdout, "whose slow mark gives no reason") == [
        "test_marked_without_a_reason"
    ]


@WORKERS
def test_a_malformed_slow_mark_or_timed_hypothesis_fails_its_test_saying_why(
    tmp_path: Path, workers: list[str]
) -> None:
    done = run_suite(tmp_path, *workers, test_small=BAD_MARKS)
    assert done.returncode == pytest.ExitCode.TESTS_FAILED, done.stdout + done.stderr
    assert "1 passed, 1 skipped, 1 xfailed, 3 errors" in done.stdout
    for test, problem in (
        ("test_positional", "the slow mark takes only reason=..."),
        ("test_blank", "the slow mark's reason is not a text"),
        ("test_timed", "Hypothesis settings that time the machine"),
    ):  # the test's error, and the list at the end
        assert done.stdout.count(f"test_small.py::{test}: {problem}") >= 2, done.stdout
    # listed, and failing the run, though the test was expected to fail or skipped
    assert "test_small.py::test_expected_to_fail: the slow mark's reason is not" in done.stdout
    assert "test_small.py::test_skipped: the slow mark's reason is not a text" in done.stdout
    assert "test_fine:" not in done.stdout
    assert not (tmp_path / "fixture-built").exists()  # failed before its fixtures were made


def test_a_skipped_or_xfailed_test_that_cannot_run_as_written_still_fails_the_run(
    tmp_path: Path,
) -> None:
    done = run_suite(tmp_path, "-k", "expected or skipped", test_small=BAD_MARKS)
    assert done.returncode == pytest.ExitCode.TESTS_FAILED, done.stdout + done.stderr
    assert "1 skipped" in done.stdout and "1 xfailed" in done.stdout
    listed = section(done.stdout, "cannot run as written")
    assert [name.split(":")[0] for name in listed] == ["test_expected_to_fail", "test_skipped"]
    assert all("the slow mark's reason is not a text" in name for name in listed)


def test_a_run_of_good_marks_only_passes(tmp_path: Path) -> None:
    done = run_suite(tmp_path, "-k", "fine or quick", test_small=BAD_MARKS + TESTS)
    assert done.returncode == pytest.ExitCode.OK, done.stdout + done.stderr
    assert "cannot run as written" not in done.stdout
