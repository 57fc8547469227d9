"""P3's detectable fraction computed by Spark over the Parquet export: the scale-out path.

``reflect export --parquet DIR`` writes one Parquet file per table, Hive-partitioned where a
table holds several repositories or sources. A team whose data outgrows one machine copies DIR
to an object store and points Spark at it (``s3a://bucket/reflection/``, see docs/loading.md
"Outgrowing one machine"). :func:`detectable_by_source` registers the exported tables as views
and runs ``sql/experiments/p3_detectable_spark.sql`` with the pre-registered P3 parameters; the
test suite checks it gives the same fraction as P3 in DuckDB.

PySpark is optional (``pip install 'agent-reflection[spark]'``) and needs a Java runtime.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agent_reflection.experiments.registration import P3Params
from agent_reflection.store.db import read_sql

#: The exported tables P3 reads.
P3_TABLES = ("tasks", "task_events", "task_links", "commits", "commit_files", "task_commits")


@dataclass(frozen=True)
class SourceDetectability:
    """One source's uncensored completed tasks and how many show a signal in the window."""

    origin: str
    eligible: int
    detectable: int


def register_export(spark: Any, root: str, tables: tuple[str, ...] = P3_TABLES) -> None:
    """Temporary views over the export at ``root`` (a folder, ``s3a://...``, ``gs://...``).

    A table is ``<root>/<table>.parquet`` or, Hive-partitioned, the folder ``<root>/<table>/``
    (the partition column comes back from the folder names).
    """
    base = root.rstrip("/")
    for table in tables:
        single = f"{base}/{table}.parquet"
        path = single if _exists(spark, single) else f"{base}/{table}"
        spark.read.parquet(path).createOrReplaceTempView(table)


def _exists(spark: Any, path: str) -> bool:
    """Whether ``path`` exists, asked through Hadoop's file system (local, s3a, gs, abfs)."""
    jvm = spark.sparkContext._jvm
    hadoop_path = jvm.org.apache.hadoop.fs.Path(path)
    file_system = hadoop_path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    return bool(file_system.exists(hadoop_path))


def p3_parameters(p: P3Params) -> dict[str, Any]:
    """The pre-registered P3 values as the Spark query's named parameters."""
    if p.as_of != "data":
        raise ValueError(
            f"p3.as_of = {p.as_of!r}: the Spark query computes each source's as_of from its "
            "data (as_of = 'data'); a fixed instant is not supported there"
        )
    return {
        "completion_kinds": ",".join(p.completion_event_kinds),
        "reopen_kinds": ",".join(p.reopen_event_kinds),
        "reopen_status_pattern": p.reopen_status_pattern,
        "accidental_minutes": float(p.accidental_close_minutes),
        "link_kinds": "\t".join(r.kind for r in p.regression_links),
        "link_directions": "\t".join(r.direction for r in p.regression_links),
        "verified_kinds": ",".join(p.verified_event_kinds),
        "verified_pattern": p.verified_pattern,
        "commit_signals": bool(p.commit_signals),
        "cross_reference_kinds": ",".join(p.cross_reference_kinds),
        "cross_reference_pattern": p.cross_reference_pattern,
        "problem_pattern": p.cross_reference_problem_pattern,
        "min_follow_up_days": float(p.min_follow_up_days),
        "window_days": float(p.window_days),
    }


def detectable_by_source(spark: Any, root: str, p: P3Params) -> list[SourceDetectability]:
    """Per source: eligible (uncensored) completed tasks and the detectable ones, by Spark."""
    register_export(spark, root)
    rows = spark.sql(
        read_sql("experiments/p3_detectable_spark.sql"), args=p3_parameters(p)
    ).collect()
    return [SourceDetectability(str(r.origin), int(r.eligible), int(r.detectable)) for r in rows]
