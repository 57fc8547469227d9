"""The scale-out path: Spark (local mode) reads the Parquet export and gets P3's fraction.

Installed from the registries (``pip install -e '.[spark]'``); skipped with the reason when
PySpark or a Java runtime is missing.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from agent_reflection.experiments.p3.analysis import run_p3, task_outcomes
from agent_reflection.experiments.p3.spark import SourceDetectability, detectable_by_source
from agent_reflection.experiments.registration import (
    Preregistration,
    apply_overrides,
    load_preregistration,
)
from agent_reflection.load.board.loader import load_board
from agent_reflection.load.board.model import ParseOptions
from agent_reflection.store.db import connect
from agent_reflection.store.export import export_parquet
from sim_rows import insert_commit, insert_event, insert_link, insert_task, insert_task_commit
from test_p3 import ONNX, T0, _embedded_onnxruntime

pytestmark = pytest.mark.slow(reason="starts Spark in local mode (a JVM) and runs P3 on it")


def _java_problem() -> str | None:
    java = shutil.which("java")
    if java is None:
        return "no Java runtime on PATH (Spark needs one: apt-get install default-jre-headless)"
    done = subprocess.run([java, "-version"], capture_output=True, text=True, check=False)
    return None if done.returncode == 0 else f"`java -version` failed: {done.stderr.strip()}"


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    pyspark = pytest.importorskip(
        "pyspark", reason="PySpark not installed: pip install -e '.[spark]'"
    )
    problem = _java_problem()
    if problem:
        pytest.skip(problem)
    session = (
        pyspark.sql.SparkSession.builder.master("local[1]")
        .appName("agent-reflection-p3")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        # the JVM's quick compiler only: these queries run once on a few rows, and the
        # optimizing compiler's warm-up cost more than it saved (27 -> 22 s for this file)
        .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
        .getOrCreate()
    )
    yield session
    session.stop()


def duckdb_by_source(con: Any, prereg: Preregistration) -> list[SourceDetectability]:
    """The same counts from P3's own code in DuckDB (``task_outcomes``, as ``run_p3`` uses)."""
    out = task_outcomes(con, prereg.p3)
    eligible = out[~out["censored"]]
    return [
        SourceDetectability(str(origin), len(group), int(group["detectable"].sum()))
        for origin, group in sorted(eligible.groupby("origin"), key=lambda g: str(g[0]))
    ]


def every_signal_kind(con: Any) -> None:
    """Tasks with each signal kind (reopen, status reopen, link, revert, fix, label), a task
    reopened before its completion, one censored and one signal outside the window."""
    done = T0 + timedelta(days=1)
    for ref in ("LINK", "REV", "FIX", "LABEL", "NONE", "EARLY", "REOPEN", "STATUS", "LATE"):
        insert_task(con, ref, created_at=T0, completed_at=done)
    insert_task(con, "FRESH", created_at=T0, completed_at=T0 + timedelta(days=390))  # censored
    insert_task(con, "BUG-9", created_at=done + timedelta(days=12))
    insert_link(con, "LINK", "BUG-9", "Regression", "outward")
    insert_link(con, "NONE", "BUG-9", "Regression", "inward")
    insert_commit(con, "r", "a" * 40, T0, "feat: add a", files=["src/a.py"])
    insert_commit(con, "r", "b" * 40, T0, "feat: add b", files=["src/b.py"])
    insert_task_commit(con, "REV", "r", "a" * 40)
    insert_task_commit(con, "FIX", "r", "b" * 40)
    insert_commit(
        con,
        "r",
        "c" * 40,
        done + timedelta(days=3),
        'Revert "feat: add a"',
        f"This reverts commit {'a' * 12}.",
        files=["src/a.py"],
    )
    insert_commit(
        con, "r", "d" * 40, done + timedelta(days=6), "fix: b crashes", files=["src/b.py"]
    )
    insert_event(con, "LABEL", done + timedelta(days=1), "labeled", "confirmed")
    insert_event(con, "EARLY", done - timedelta(hours=1), "reopened")
    insert_event(con, "REOPEN", done + timedelta(days=29), "reopened")
    insert_event(con, "STATUS", done + timedelta(days=2), "status_changed", "Resolved -> Reopened")
    insert_event(con, "LATE", done + timedelta(days=31), "reopened")  # outside the window
    insert_task(con, "LAST", created_at=T0 + timedelta(days=400))  # the source's as_of
    # a mention from a bug report filed after the completion counts; from one filed before,
    # not
    for ref in ("XREF", "OLDREF"):
        insert_task(con, ref, created_at=T0, completed_at=done)
    insert_task(con, "BUG-20", created_at=done + timedelta(days=3), labels=["bug"])
    insert_task(con, "BUG-21", created_at=T0, labels=["bug"])
    insert_event(con, "XREF", done + timedelta(days=4), "cross-referenced", "issue BUG-20")
    insert_event(con, "OLDREF", done + timedelta(days=4), "cross-referenced", "issue BUG-21")
    # closed by mistake and reopened 2 minutes later: completed only at its real close
    insert_task(con, "ACCIDENT", created_at=T0, completed_at=done + timedelta(days=10))
    insert_event(con, "ACCIDENT", done, "closed")
    insert_event(con, "ACCIDENT", done + timedelta(minutes=2), "reopened")
    insert_event(con, "ACCIDENT", done + timedelta(days=10), "closed")


def test_spark_matches_duckdb_on_every_signal_kind(spark: Any, tmp_path: Path) -> None:
    prereg = apply_overrides(load_preregistration(), {"p3.min_tasks": 1})
    con = connect(tmp_path / "kinds.duckdb")
    every_signal_kind(con)
    export_parquet(con, tmp_path / "export")
    ours = duckdb_by_source(con, prereg)
    theirs = detectable_by_source(spark, str(tmp_path / "export"), prereg.p3)
    assert theirs == ours
    # LINK, REV, FIX, LABEL, REOPEN, STATUS, XREF of 12 uncensored (FRESH censored; NONE,
    # EARLY, LATE not in the window; OLDREF's mention is an older report; ACCIDENT's reopen
    # undoes an accidental close)
    assert [(s.eligible, s.detectable) for s in theirs] == [(12, 7)]
    result = run_p3(con, apply_overrides(prereg, {"p3.required_channels": []}))
    assert (result.details["eligible"], result.details["detectable"]) == (12, 7)


@pytest.mark.shared
def test_spark_gets_p3s_fraction_on_real_exports(
    spark: Any, shared_dir: Path, tmp_path: Path
) -> None:
    """Real data: the Kafka Jira export (regression links) and the onnxruntime GitHub dump with
    its issue events (201 reopens), two sources with their own as_of."""
    prereg = load_preregistration()
    con = connect(tmp_path / "real.duckdb")
    load_board(con, shared_dir / "data/jira/kafka-jira-bug-fix-dataset.csv.gz", "jira")
    embedded = _embedded_onnxruntime(shared_dir, tmp_path / "onnx.jsonl")
    assert (shared_dir / ONNX).is_dir()
    load_board(con, embedded, "github", ParseOptions(project="microsoft/onnxruntime"))
    export_parquet(con, tmp_path / "export")
    ours = duckdb_by_source(con, prereg)
    theirs = detectable_by_source(spark, str(tmp_path / "export"), prereg.p3)
    assert theirs == ours
    assert len(theirs) == 2 and sum(s.detectable for s in theirs) > 0
    result = run_p3(con, prereg)
    n, k = result.details["eligible"], result.details["detectable"]
    # every source lacks linked commits: P3 reports a lower bound over all of them
    assert result.details["lower_bound"] is True
    assert (n, k) == (sum(s.eligible for s in theirs), sum(s.detectable for s in theirs))
    assert result.metric.interval.value == pytest.approx(k / n)
    print({s.origin: (s.detectable, s.eligible) for s in theirs}, f"P3: {k}/{n}")
