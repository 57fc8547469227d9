"""The suite's own bookkeeping of slow tests (tests/conftest.py), run on a small suite of its
own in a real pytest process: a test over ``SLOW_SECONDS`` without the ``slow`` mark is listed,
and so is one over ``SLOW_REASON_SECONDS`` whose mark gives no reason, also when xdist's
workers run the tests and the controller writes the summary. The thresholds are lowered there
so that a test sleeping 0.3 s crosses both."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import REPO_ROOT

SUITE_CONFTEST = REPO_ROOT / "tests" / "conftest.py"
PLUGIN = f"""
import importlib.util

_spec = importlib.util.spec_from_file_location("suite_conftest", {str(SUITE_CONFTEST)!r})
suite = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(suite)
suite.SLOW_SECONDS = suite.SLOW_REASON_SECONDS = 0.2
pytest_collection_modifyitems = suite.pytest_collection_modifyitems
pytest_runtest_logreport = suite.pytest_runtest_logreport
pytest_terminal_summary = suite.pytest_terminal_summary


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: takes more than a few seconds")
"""

TESTS = """
import time

import pytest


def test_quick():
    pass


def test_unmarked_and_slow():
    time.sleep(0.3)


@pytest.mark.slow
def test_marked_without_a_reason():
    time.sleep(0.3)


@pytest.mark.slow(reason="sleeps on purpose")
def test_marked_with_a_reason():
    time.sleep(0.3)
"""


def run_suite(folder: Path, tests: str, *args: str) -> subprocess.CompletedProcess[str]:
    (folder / "conftest.py").write_text(textwrap.dedent(PLUGIN))
    (folder / "test_small.py").write_text(textwrap.dedent(tests))
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def section(output: str, title: str) -> list[str]:
    """The test names listed under ``title`` in the terminal summary."""
    lines = output.splitlines()
    start = next((i for i, line in enumerate(lines) if title in line), None)
    if start is None:
        return []
    names = []
    for line in lines[start + 1 :]:
        if "::" not in line or line.startswith("="):
            break
        names.append(line.rsplit("::", 1)[1])
    return names


@pytest.mark.parametrize("workers", [[], ["-n", "1"]], ids=["one process", "xdist"])
def test_slow_tests_without_the_mark_or_its_reason_are_listed(
    tmp_path: Path, workers: list[str]
) -> None:
    done = run_suite(tmp_path, TESTS, *workers)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "4 passed" in done.stdout
    assert section(done.stdout, "s not marked slow") == ["test_unmarked_and_slow"]
    assert section(done.stdout, "whose slow mark gives no reason") == [
        "test_marked_without_a_reason"
    ]


def test_a_slow_mark_with_anything_but_a_reason_refuses_the_run(tmp_path: Path) -> None:
    marked = """
    import pytest


    @pytest.mark.slow("a positional reason")
    def test_positional():
        pass


    @pytest.mark.slow(reason="")
    def test_empty():
        pass


    @pytest.mark.slow(reason="fine")
    def test_fine():
        pass
    """
    done = run_suite(tmp_path, marked)
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout + done.stderr
    assert "test_small.py::test_positional: the slow mark takes only reason=..." in done.stderr
    assert "test_small.py::test_empty: the slow mark's reason is not a text" in done.stderr
    assert "test_fine" not in done.stderr
