"""CI results per commit -> ``ci_runs``: GitHub check runs, workflow runs, workflow jobs and
commit statuses as the REST API writes them, ``gh run list --json`` output, JUnit XML reports,
and CSV tables of CI results (:data:`CSV_COLUMNS`).

JSON input (a file, ``.gz`` read transparently): a response object (``{"check_runs": [...]}``,
``{"workflow_runs": [...]}``, ``{"jobs": [...]}``, a combined status ``{"sha", "statuses":
[...]}``), a list of runs, statuses or ``gh`` objects (or several lists one after another:
``gh api --paginate``), or JSONL. Each record is told by its keys:

============  ==========================================  ===================================
kind          GitHub source                               name / id / times
============  ==========================================  ===================================
workflow_run  ``GET /repos/O/R/actions/runs``              workflow name, id, run_started_at
                                                          (else created_at) .. updated_at
job           ``GET /repos/O/R/actions/runs/ID/jobs``      job name, id, started_at ..
                                                          completed_at
check_run     ``GET /repos/O/R/commits/REF/check-runs``    check name, id, started_at ..
                                                          completed_at
status        ``GET /repos/O/R/commits/REF/statuses``      context, id, created_at ..
              (or ``/status``)                            updated_at; ``state`` is the
                                                          conclusion
workflow_run  ``gh run list --json ...`` (camelCase)       workflowName (else name),
                                                          databaseId, startedAt .. updatedAt
junit         a JUnit XML report (``--repo``, ``--sha``)   each ``<testsuite>``: failure when
                                                          it has failures or errors
============  ==========================================  ===================================

repo = ``owner/repo`` from the record's URLs or ``repository`` (``--repo`` when it has none);
sha = the full commit id CI ran on. Conclusions are stored lower-case as reported (success,
failure, cancelled, skipped, timed_out, neutral, action_required, startup_failure, stale;
statuses: success, failure, error, pending); a run still going has none.

Natural key (repo, sha, kind, name, run_id, attempt): loading the same file again adds
nothing; a run whose stored copy differs (it finished since) is replaced and counted loaded.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from agent_reflection.errors import ReflectionError
from agent_reflection.load.board.fields import as_dict, opt_str
from agent_reflection.load.board.model import Notice, RecordError, Rejected
from agent_reflection.load.board.source import (
    ProgressFn,
    check_exists,
    csv_tasks,
    json_items,
    open_binary,
    sniff,
)
from agent_reflection.load.board.timeparse import parse_time
from agent_reflection.load.text import READ_ERRORS, read_error
from agent_reflection.names import name_text
from agent_reflection.store.db import LoadSummary, begin_load, read_sql, registered

_REPO_IN_URL = re.compile(r"(?:/repos/|://github\.com/)([^/]+/[^/]+?)(?:/|$)")
_STATUS_SHA = re.compile(r"/statuses/([0-9a-fA-F]{40})(?:$|[/?#])")
_SHA = re.compile(r"^[0-9a-fA-F]{40}$")
KINDS = ("workflow_run", "job", "check_run", "status", "junit")
_TS = pa.timestamp("us", tz="UTC")
CI_SCHEMA = pa.schema(
    [
        ("repo", pa.string()),
        ("sha", pa.string()),
        ("kind", pa.string()),
        ("name", pa.string()),
        ("run_id", pa.string()),
        ("attempt", pa.int32()),
        ("status", pa.string()),
        ("conclusion", pa.string()),
        ("started", _TS),
        ("finished", _TS),
        ("url", pa.string()),
        ("branch", pa.string()),
        ("event", pa.string()),
        ("fingerprint", pa.string()),
        ("raw", pa.string()),
        ("source_file", pa.string()),
    ]
)


class CiFormatError(ReflectionError, ValueError):
    """A CI file as a whole cannot be read (e.g. a JUnit report without --repo / --sha)."""


@dataclass(frozen=True)
class CiOptions:
    """What the user told us: the repository and commit of records that do not name them."""

    repo: str | None = None
    sha: str | None = None


@dataclass(frozen=True)
class CiRun:
    """One CI result on one commit."""

    repo: str
    sha: str
    kind: str
    name: str
    run_id: str
    location: str
    raw: Any
    attempt: int = 1
    status: str | None = None
    conclusion: str | None = None
    started: datetime | None = None
    finished: datetime | None = None
    url: str | None = None
    branch: str | None = None
    event: str | None = None
    raw_json: str = field(init=False, repr=False)

    def __post_init__(self) -> None:
        text = json.dumps(self.raw, sort_keys=True, ensure_ascii=False, default=str)
        object.__setattr__(self, "raw_json", text)

    def fingerprint(self) -> str:
        body = [
            self.status,
            self.conclusion,
            _iso(self.started),
            _iso(self.finished),
            self.url,
            self.branch,
            self.event,
            self.raw_json,
        ]
        return hashlib.sha1(json.dumps(body).encode("utf-8", "surrogateescape")).hexdigest()


def parse_ci(
    path: Path, options: CiOptions, progress: ProgressFn | None = None
) -> Iterator[CiRun | Rejected | Notice]:
    """Every CI result of one file (JSON/JSONL, JUnit XML or CSV); a :class:`Notice` says
    that bytes which were not UTF-8 were read as Windows-1252."""
    check_exists(path)
    head, problem = sniff(path)
    if problem is not None:  # binary, or not even its start decompresses
        yield problem
        return
    head = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if head.startswith(b"<"):
        yield from _junit(path, options, progress)
        return
    if not head.startswith((b"[", b"{")):
        yield from _csv(path, options, progress)
        return
    yield from json_items(
        path,
        progress,
        None,
        lambda record, where: _runs_of(record, options, where),
        lambda record: json.dumps(record, default=str)[:4096],
    )


def _runs_of(record: Any, options: CiOptions, where: str) -> Iterator[CiRun]:
    if not isinstance(record, dict):
        raise RecordError("run", f"expected a JSON object, got {type(record).__name__}")
    for key, kind in (
        ("workflow_runs", "workflow_run"),
        ("jobs", "job"),
        ("check_runs", "check_run"),
    ):
        if isinstance(record.get(key), list):
            for i, item in enumerate(record[key]):
                yield _one(as_dict(item, f"{key}[{i}]"), kind, options, f"{where} {key}[{i}]")
            return
    if isinstance(record.get("statuses"), list):  # combined status: the sha is the parent's
        parent_sha = opt_str(record.get("sha"), "sha")
        repository = as_dict(record.get("repository"), "repository")
        for i, item in enumerate(record["statuses"]):
            item = as_dict(item, f"statuses[{i}]")
            extra = {"sha": parent_sha, "repository": repository}
            yield _one({**extra, **item}, "status", options, f"{where} statuses[{i}]")
        return
    yield _one(record, _kind_of(record), options, where)


def _kind_of(record: dict[str, Any]) -> str:
    if "headSha" in record or "databaseId" in record:
        return "workflow_run"  # gh run list --json
    if "context" in record and "state" in record:
        return "status"
    if "run_id" in record and "head_sha" in record:
        return "job"
    if "workflow_id" in record or "run_started_at" in record or "run_number" in record:
        return "workflow_run"
    if "head_sha" in record and ("check_suite" in record or "app" in record):
        return "check_run"
    raise RecordError(
        "kind",
        "not a GitHub check run, workflow run, job, commit status or `gh run list --json` "
        "object (none of head_sha / headSha / context+state)",
    )


def _one(record: dict[str, Any], kind: str, options: CiOptions, where: str) -> CiRun:
    gh = "headSha" in record or "databaseId" in record
    sha_value = record.get("headSha") if gh else record.get("head_sha", record.get("sha"))
    sha = opt_str(sha_value, "headSha" if gh else "head_sha")
    if sha is None and kind == "status":
        m = _STATUS_SHA.search(opt_str(record.get("url"), "url") or "")
        sha = m.group(1) if m else None
    sha = sha or options.sha
    if sha is None or not _SHA.match(sha):
        raise RecordError("head_sha", f"{sha!r} is not a full 40-hex commit id")
    repo = _repo(record, options)
    attempt: Any
    url: str | None
    name: str | None
    run_id: str | None
    if gh:
        name = opt_str(record.get("workflowName") or record.get("name"), "workflowName")
        run_id = opt_str(record.get("databaseId"), "databaseId")
        started = parse_time(record.get("startedAt") or record.get("createdAt"), "startedAt")
        finished = parse_time(record.get("updatedAt"), "updatedAt")
        attempt = record.get("attempt")
        url = opt_str(record.get("url"), "url")
        branch, event = record.get("headBranch"), record.get("event")
    elif kind == "status":
        name = opt_str(record.get("context"), "context")
        run_id = opt_str(record.get("id"), "id")
        started = parse_time(record.get("created_at"), "created_at")
        finished = parse_time(record.get("updated_at"), "updated_at")
        attempt, url = 1, opt_str(record.get("target_url") or record.get("url"), "target_url")
        branch = event = None
    else:
        name = opt_str(record.get("name"), "name")
        run_id = opt_str(record.get("id"), "id")
        if kind == "workflow_run":
            started = parse_time(
                record.get("run_started_at") or record.get("created_at"), "run_started_at"
            )
            finished = parse_time(record.get("updated_at"), "updated_at")
        else:
            started = parse_time(record.get("started_at"), "started_at")
            finished = parse_time(record.get("completed_at"), "completed_at")
        attempt = record.get("run_attempt")
        url = opt_str(record.get("html_url") or record.get("url"), "html_url")
        branch, event = record.get("head_branch"), record.get("event")
    if name is None:
        raise RecordError("name", "the run has no name (workflow, job, check or context)")
    if attempt is None:
        attempt = 1
    if not isinstance(attempt, int) or isinstance(attempt, bool) or attempt < 1:
        raise RecordError("run_attempt", f"expected a positive integer, got {attempt!r}")
    status: str | None = "completed"
    if kind == "status":
        conclusion = opt_str(record.get("state"), "state")
        if conclusion and conclusion.lower() == "pending":
            status, conclusion = "pending", None
    else:
        status = opt_str(record.get("status"), "status")
        conclusion = opt_str(record.get("conclusion"), "conclusion")
    return CiRun(
        repo=repo,
        sha=sha.lower(),
        kind=kind,
        name=name,
        run_id=run_id or "",
        location=where,
        raw=record,
        attempt=attempt,
        status=status.lower() if status else None,
        conclusion=conclusion.lower() if conclusion else None,
        started=started,
        finished=finished,
        url=url,
        branch=opt_str(branch, "head_branch"),
        event=opt_str(event, "event"),
    )


def _repo(record: dict[str, Any], options: CiOptions) -> str:
    repository = as_dict(record.get("repository"), "repository")
    named = repository.get("full_name") or repository.get("nameWithOwner")
    if isinstance(named, str) and "/" in named:
        return named
    for key in ("url", "html_url", "run_url", "check_run_url", "target_url"):
        value = record.get(key)
        if isinstance(value, str) and (m := _REPO_IN_URL.search(value)):
            return m.group(1)
    if options.repo:
        return options.repo
    raise RecordError("repository", "no repository / url names the repository; pass --repo O/R")


# -- CSV --------------------------------------------------------------------------------------

#: ci_runs column -> header names a CSV may use for it (first present wins): the table's own
#: names, GitHub's, and those of BugSwarm's job tables (repo_dir, commit, job_id, result).
CSV_COLUMNS: dict[str, tuple[str, ...]] = {
    "repo": ("repo", "repository", "full_name", "repo_dir"),
    "sha": ("sha", "head_sha", "commit", "commit_sha"),
    "kind": ("kind",),
    "name": ("name", "job_name", "workflow", "check_name", "context"),
    "run_id": ("run_id", "job_id", "id", "build_id"),
    "attempt": ("attempt", "run_attempt"),
    "status": ("status",),
    "conclusion": ("conclusion", "result", "state"),
    "started": ("started", "started_at", "run_started_at", "created_at"),
    "finished": ("finished", "completed_at", "updated_at"),
    "url": ("url", "html_url"),
    "branch": ("branch", "head_branch"),
    "event": ("event",),
}


def _csv(
    path: Path, options: CiOptions, progress: ProgressFn | None
) -> Iterator[CiRun | Rejected | Notice]:
    """A CSV of CI results, one row each; ``kind`` defaults to ``job`` when the header has a
    job column, else ``workflow_run``."""

    def row_parser(header: list[str]) -> Callable[[list[str], str], CiRun]:
        index = {h.strip().lower(): i for i, h in reversed(list(enumerate(header)))}
        columns = {
            ours: next(index[n] for n in names if n in index)
            for ours, names in CSV_COLUMNS.items()
            if any(n in index for n in names)
        }
        missing = [c for c in ("sha", "name", "conclusion") if c not in columns]
        if missing:
            raise CiFormatError(
                f"{path}: a CI results CSV needs columns for {', '.join(missing)} "
                f"(e.g. {', '.join(CSV_COLUMNS[m][0] for m in missing)}); found {header[:30]}"
            )
        kind = "job" if {"job_id", "job_name"} & index.keys() else "workflow_run"
        return lambda row, where: _csv_run(
            {ours: row[i].strip() or None for ours, i in columns.items()},
            dict(zip(header, row, strict=True)),
            kind,
            options,
            where,
        )

    return csv_tasks(path, progress, None, row_parser)


def _csv_run(
    record: dict[str, str | None], raw: dict[str, str], kind: str, options: CiOptions, where: str
) -> CiRun:
    sha = record.get("sha") or options.sha
    if sha is None or not _SHA.match(sha):
        raise RecordError("sha", f"{sha!r} is not a full 40-hex commit id")
    repo = record.get("repo") or options.repo
    if repo is None:
        raise RecordError("repo", "no repo column value; pass --repo OWNER/REPO")
    name = record.get("name")
    if name is None:
        raise RecordError("name", "is missing or empty")
    attempt_text = record.get("attempt") or "1"
    if not attempt_text.isdigit() or int(attempt_text) < 1:
        raise RecordError("attempt", f"expected a positive integer, got {attempt_text!r}")
    conclusion = (record.get("conclusion") or "").lower() or None
    return CiRun(
        repo=repo,
        sha=sha.lower(),
        kind=(record.get("kind") or kind).lower(),
        name=name,
        run_id=record.get("run_id") or "",
        location=where,
        raw=record,
        attempt=int(attempt_text),
        status=(record.get("status") or "completed").lower(),
        conclusion=conclusion,
        started=parse_time(record.get("started"), "started"),
        finished=parse_time(record.get("finished"), "finished"),
        url=record.get("url"),
        branch=record.get("branch"),
        event=record.get("event"),
    )


# -- JUnit XML --------------------------------------------------------------------------------


def _junit(
    path: Path, options: CiOptions, progress: ProgressFn | None
) -> Iterator[CiRun | Rejected]:
    from xml.etree.ElementTree import ParseError

    import defusedxml.ElementTree as SafeTree  # never expands entities from the file

    if not options.repo or not options.sha:
        raise CiFormatError(
            f"{path}: a JUnit XML report names no repository or commit; pass --repo OWNER/REPO "
            "and --sha COMMIT (the commit the tests ran on)"
        )
    if not _SHA.match(options.sha):
        raise CiFormatError(f"--sha {options.sha!r} is not a full 40-hex commit id")
    try:
        with open_binary(path, progress) as fh:
            data = fh.read()
    except READ_ERRORS as exc:  # a corrupt or truncated .gz: XML cannot be read in part
        yield Rejected(str(path), None, read_error(exc, 0), file_error=True)
        return
    try:
        root = SafeTree.fromstring(data)
    except (ParseError, ValueError) as exc:
        yield Rejected(
            str(path), data[:2000], f"not a well-formed JUnit XML report: {exc}", file_error=True
        )
        return
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    if root.tag not in ("testsuite", "testsuites"):
        yield Rejected(
            str(path),
            data[:2000],
            f"root element <{root.tag}> is not <testsuites> or <testsuite>",
            file_error=True,
        )
        return
    for i, suite in enumerate(suites):
        where = f"{path} testsuite[{i}]"
        try:
            yield _suite_run(suite.attrib, suite, options, where)
        except RecordError as exc:
            yield Rejected(where, json.dumps(dict(suite.attrib)), str(exc))


def _suite_run(attrib: dict[str, str], suite: Any, options: CiOptions, where: str) -> CiRun:
    def count(name: str) -> int:
        text = attrib.get(name, "0") or "0"
        try:
            return int(float(text))
        except ValueError:
            raise RecordError(f"testsuite.{name}", f"{text!r} is not a number") from None

    cases = suite.findall("testcase")
    tests = count("tests") if "tests" in attrib else len(cases)
    failures, errors, skipped = count("failures"), count("errors"), count("skipped")
    failed_cases = sum(
        1 for c in cases if c.find("failure") is not None or c.find("error") is not None
    )
    failures_total = max(failures + errors, failed_cases)
    if failures_total:
        conclusion = "failure"
    elif tests and skipped >= tests:
        conclusion = "skipped"
    else:
        conclusion = "success"
    started = parse_time(attrib.get("timestamp") or None, "testsuite.timestamp")
    seconds = attrib.get("time")
    finished = None
    if started is not None and seconds:
        try:
            finished = started + timedelta(seconds=float(seconds.replace(",", "")))
        except ValueError:
            raise RecordError("testsuite.time", f"{seconds!r} is not a number of seconds") from None
    name = attrib.get("name") or "testsuite"
    raw = {
        "name": name,
        "tests": tests,
        "failures": failures,
        "errors": errors,
        "skipped": skipped,
        "timestamp": attrib.get("timestamp"),
        "time": seconds,
        "failed_cases": failed_cases,
    }
    assert options.repo is not None and options.sha is not None
    return CiRun(
        repo=options.repo,
        sha=options.sha.lower(),
        kind="junit",
        name=name,
        run_id=attrib.get("timestamp") or "",
        location=where,
        raw=raw,
        status="completed",
        conclusion=conclusion,
        started=started,
        finished=finished,
    )


# -- the load ---------------------------------------------------------------------------------


def load_ci(
    con: duckdb.DuckDBPyConnection,
    path: str | Path,
    options: CiOptions | None = None,
    progress: ProgressFn | None = None,
) -> LoadSummary:
    """Load one CI results file into ``ci_runs``; unreadable records go to ``rejected``."""
    path = Path(path)
    options = options or CiOptions()
    check_exists(path)
    if path.is_dir():
        raise CiFormatError(f"{path} is a folder; pass the files in it (e.g. {path}/*.json)")
    with begin_load(con, "ci", str(path), fail_if_all_rejected=True) as run:
        pending: dict[tuple[str, str, str, str, str, int], CiRun] = {}
        duplicates = 0
        try:
            for item in parse_ci(path, options, progress):
                if isinstance(item, Notice):  # about the file, not a record
                    run.warn(item.text)
                    continue
                run.read += 1
                if isinstance(item, Rejected):
                    run.reject(item.location, item.raw, item.reason, file_error=item.file_error)
                    continue
                key = (item.repo, item.sha, item.kind, item.name, item.run_id, item.attempt)
                if key in pending:
                    duplicates += 1  # a later copy of the same run (overlapping pages) wins
                pending[key] = item
        except CiFormatError as exc:
            run.read += 1
            run.reject(str(path), None, str(exc))
            raise
        run.warn_if_empty(path)
        new, changed, same = write_ci_runs(con, run.load_id, list(pending.values()))
        run.loaded += new + changed
        run.already_present += same + duplicates
        kinds = dict(Counter(r.kind for r in pending.values()))  # asdict would recount a Counter
        run.detail.update({"updated": changed, "duplicates_in_load": duplicates, "kinds": kinds})
    return run.summary()


def write_ci_runs(
    con: duckdb.DuckDBPyConnection, load_id: int, runs: Sequence[CiRun]
) -> tuple[int, int, int]:
    """Store ``runs`` (distinct keys); returns (new, changed, unchanged)."""
    if not runs:
        return 0, 0, 0
    rows = [  # the run's own fields, and what is stored for its record
        {
            **vars(r),
            "fingerprint": r.fingerprint(),
            "raw": r.raw_json,
            "source_file": name_text(r.location),
        }
        for r in runs
    ]
    table = pa.Table.from_pylist(rows, schema=CI_SCHEMA)
    with registered(con, ci_incoming=table):
        states = dict(con.execute(read_sql("ci/classify.sql")).fetchall())
        con.execute(read_sql("ci/upsert.sql"), [load_id])
    return (int(states.get("new", 0)), int(states.get("changed", 0)), int(states.get("same", 0)))


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None
