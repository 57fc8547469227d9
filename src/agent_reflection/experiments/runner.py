"""Run the experiment notebooks and assemble ``reports/<run-id>/``.

Each experiment's jupytext notebook is executed by papermill in a fresh kernel of the run's
:class:`~agent_reflection.execute.pool.KernelPool` (:mod:`agent_reflection.execute`), renders
its ``report.html`` and writes ``results.json`` and its figures. Then ``index.html`` and
``summary.md`` carry the verdicts and the Phase-0 gate.

Lanes (``--jobs``, threads) run experiments side by side, each in a kernel process of its
own; the summary notebook runs once they are all done. The kernels of the notebooks to come
are launched while the ones before them run.

A failed cell stops the run with :class:`ExperimentFailed` (output notebook, cell index,
error); no index or summary is written then, only ``FAILED.txt`` — never a half-report that
looks complete.

The runner resolves the pre-registration once (:func:`~agent_reflection.experiments.
preregistration.resolve_preregistration`, in the folder ``reflect`` runs in) and hands every
notebook that exact file; it records in each ``results.json`` the file's check against the lock
(``registration``, with the route that chose it) and what data the experiment read (``data``),
hashed before any notebook runs and again once the experiment notebooks are done (beside the
summary notebook): a database that changed in between fails the run.
"""

from __future__ import annotations

import html
import os
import re
import shutil
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agent_reflection.errors import ReflectionError
from agent_reflection.execute.execute import (
    DEFAULT_EXECUTION_TIMEOUT,
    DEFAULT_START_TIMEOUT,
    NotebookFailed,
    execute_notebook,
)
from agent_reflection.execute.kernel import ensure_kernel
from agent_reflection.execute.pool import KernelPool
from agent_reflection.experiments.analysis_code import (
    EXPERIMENTS,
    SUMMARY_NOTEBOOK,
    code_sha256,
    executed_code,
    notebooks_source,
)
from agent_reflection.experiments.provenance import DataProvenance, data_provenance, tables_read
from agent_reflection.experiments.registration import (
    SECTIONS,
    InvalidPreregistration,
    Preregistration,
    Registration,
    amended_after_loads,
    load_for_run,
    load_preregistration,
    parameter_differences,
    params_dict,
    registered_preregistration_path,
)
from agent_reflection.experiments.report import (
    Summary,
    experiment_summary,
    is_simulated,
    read_summary,
    write_report,
)
from agent_reflection.experiments.results import read_results, write_results_doc
from agent_reflection.experiments.verdict import Gate, phase0_gate
from agent_reflection.store.db import MissingDatabase, connect, require_database

#: Modules every experiment notebook imports. A kernel launched ahead of its notebook imports
#: them while it waits, so the notebook finds them loaded.
EXPERIMENT_MODULES = (
    "pandas",
    "duckdb",
    "IPython.display",
    "agent_reflection.experiments.notebook",
    "agent_reflection.experiments.plots",
)
#: What a kernel started for the summary notebook imports ahead (what the notebook imports).
SUMMARY_MODULES = (
    "IPython.display",
    "agent_reflection.experiments.verdict",
    "agent_reflection.experiments.report",
)
#: Kernels launched ahead of their notebook at any one time, once the lanes run. One is enough
#: for the next notebook to find its kernel ready; more would take CPU from the notebooks
#: running (two CPUs here).
KERNELS_AHEAD = 1
#: Notebook parameters that are passed as themselves, not as pre-registration overrides.
DIRECT_PARAMETERS = {"p1": {"corpus"}, "p2": {"gate_labels"}, "p3": set()}
#: Lanes of a run (notebooks side by side): one per CPU, no more than there are experiments.
DEFAULT_JOBS = max(1, min(3, os.cpu_count() or 1))


class ExperimentFailed(ReflectionError, RuntimeError):
    """A notebook cell raised, or a notebook finished without a valid results.json."""


@dataclass(frozen=True)
class RunReport:
    """What a run wrote: its folder, index and summary, each experiment's results.v1 document,
    the gate, and each executed notebook."""

    run_id: str
    run_dir: Path
    index_html: Path
    summary_md: Path
    results: Mapping[str, Mapping[str, Any]]
    gate: Gate
    notebooks: Mapping[str, Path] = field(default_factory=dict)

    def verdict_lines(self) -> list[str]:
        """Each experiment's verdict and rule, then the summary its report opens with
        (question, number, n, what would change the verdict), as ``reflect run`` prints it."""
        lines = []
        for name, doc in self.results.items():
            tag = " (EXPLORATORY)" if doc["exploratory"] else ""
            tag += " (SIMULATED data)" if is_simulated(doc) else ""
            lines.append(f"{name}: {doc['verdict']}{tag} — rule: {doc['kill_condition']}")
            lines += [f"  EXPLORATORY because {r}" for r in _exploratory_reasons(doc)]
            lines += experiment_summary(doc).body_lines(without=("verdict",))
        return lines

    def to_dict(self) -> dict[str, Any]:
        """``reflect run --json``: what the terminal lines say, as data."""
        return {
            "run_id": self.run_id,
            "report": str(self.index_html),
            "summary": str(self.summary_md),
            "gate": self.gate.to_dict(),
            "simulated": self.gate.simulated is not None,
            "experiments": {
                name: {
                    # the summary's first line (P2: on whose labels an exploratory verdict rests)
                    "lead": experiment_summary(doc).lead,
                    "verdict": doc["verdict"],
                    "exploratory": doc["exploratory"],
                    "exploratory_reasons": _exploratory_reasons(doc),
                    "simulated": is_simulated(doc),
                    "rule": doc["kill_condition"],
                    "metric": doc["metric"],
                    "n": doc["n"],
                    "results": str(self.run_dir / name / "results.json"),
                    **experiment_summary(doc).to_dict(),
                }
                for name, doc in self.results.items()
            },
        }


def _exploratory_reasons(doc: Mapping[str, Any]) -> list[str]:
    """Why a results document is exploratory (empty when it is pre-registered)."""
    if not doc["exploratory"]:
        return []
    reasons = doc["preregistration"].get("exploratory_reasons") or []
    return [str(r) for r in reasons] or ["parameters differ from the pre-registration"]


@dataclass(frozen=True)
class AnalysisRun:
    """What an analysis notebook (not a pre-registered experiment) wrote."""

    notebook: Path
    report_html: Path
    #: the summary the notebook wrote (None: it wrote none)
    summary: Summary | None

    def to_dict(self) -> dict[str, Any]:
        """``reflect run in-loop|cycle|agent-vs-human --json``."""
        return {
            "notebook": str(self.notebook),
            "report": str(self.report_html),
            "summary": self.summary.to_dict() if self.summary else None,
        }

    def lines(self) -> list[str]:
        """The summary, then where the notebook and its report are."""
        summary = list(self.summary.lines()) if self.summary else []
        return [*summary, f"notebook: {self.notebook}", f"report: {self.report_html}"]


def notebooks_dir() -> Path:
    """``$REFLECT_NOTEBOOKS``, ./notebooks, the checkout's notebooks/ or the packaged copy."""
    return notebooks_source()[0]


def split_parameters(
    names: Sequence[str], params: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """(pre-registration overrides ``{"p1.x": v}``, direct notebook parameters per experiment).

    A dotted name (``p1.high_confidence_threshold``) is an override of that section. A bare
    name must be a direct parameter (``corpus``) or a key of exactly one selected experiment's
    section; otherwise the error asks for the dotted name.
    """
    from dataclasses import fields

    overrides: dict[str, Any] = {}
    direct: dict[str, dict[str, Any]] = {n: {} for n in names}
    for key, value in params.items():
        if isinstance(value, Mapping) and key in SECTIONS:
            for sub, v in value.items():
                overrides[f"{key}.{sub}"] = v
            continue
        if "." in key:
            overrides[key] = value
            continue
        targets = [n for n in names if key in DIRECT_PARAMETERS[n]]
        if targets:
            for n in targets:
                direct[n][key] = value
            continue
        owners = [n for n in names if key in {f.name for f in fields(SECTIONS[n])}]
        if len(owners) != 1:
            where = "several experiments" if owners else "no selected experiment"
            raise InvalidPreregistration(
                f"parameter {key!r} belongs to {where}; name it as section.key, e.g. p1.{key}"
            )
        overrides[f"{owners[0]}.{key}"] = value
    return overrides, direct


class UnknownCorpus(ReflectionError, ValueError):
    """``-p corpus NAME`` names a corpus that has no labels in the database."""


#: Corpora named at most in :class:`UnknownCorpus`'s message.
CORPORA_LISTED = 20


def check_corpus(con: Any, db: Path, params: Mapping[str, Any]) -> dict[str, Any]:
    """P1's direct parameters with ``corpus`` as text, or raise :class:`UnknownCorpus` when
    the ``labels`` table holds no row of that corpus (the message lists the corpora it has,
    with their row counts, or says that no labels are loaded). No ``corpus``, or an empty
    one (every corpus), is left to P1 as it is."""
    corpus = params.get("corpus")
    if corpus is None or corpus == "":
        return dict(params)
    corpus = str(corpus)  # `-p corpus 2024` is YAML for a number; corpora are names
    from agent_reflection.store.db import read_sql

    found = con.execute(read_sql("experiments/p1_corpora.sql")).fetchall()
    if any(name == corpus for name, _ in found):
        return {**params, "corpus": corpus}
    if not found:
        raise UnknownCorpus(
            f"corpus {corpus!r}: no labels loaded in {db}; run `reflect load labels FILE` "
            "(the corpus is the file's name without extensions, or --corpus NAME)"
        )
    listed = ", ".join(f"{name} ({n:,} rows)" for name, n in found[:CORPORA_LISTED])
    more = f" and {len(found) - CORPORA_LISTED:,} more" if len(found) > CORPORA_LISTED else ""
    raise UnknownCorpus(
        f"corpus {corpus!r} has no labels in {db}. Its corpora: {listed}{more}. Pass one of "
        f"them (-p corpus NAME), or load this one: reflect load labels FILE --corpus {corpus}"
    )


def _database(db_path: str | Path) -> Path:
    """The existing database the notebooks read, else :class:`ExperimentFailed` saying where
    it looked (``store.db.require_database``)."""
    try:
        return require_database(db_path).resolve()
    except MissingDatabase as exc:
        raise ExperimentFailed(str(exc)) from None


def new_run_id(out_root: Path) -> str:
    base = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    run_id, i = base, 1
    while (out_root / run_id).exists():
        i += 1
        run_id = f"{base}-{i}"
    return run_id


def run_experiments(
    names: Sequence[str],
    *,
    db_path: str | Path,
    out_root: str | Path = "reports",
    params: Mapping[str, Any] | None = None,
    preregistration_path: str | Path | None = None,
    run_id: str | None = None,
    kernel: str | None = None,
    start_timeout: int = DEFAULT_START_TIMEOUT,
    execution_timeout: int = DEFAULT_EXECUTION_TIMEOUT,
    summary_notebook: bool = True,
    jobs: int | None = None,
) -> RunReport:
    """Run the named experiments (``p1``, ``p2``, ``p3``) and write the report.

    ``jobs`` lanes (default :data:`DEFAULT_JOBS`) run the experiments side by side; the
    summary notebook runs once they are done. Every notebook runs in a fresh kernel, launched
    while the notebooks before it ran. The notebooks open the database read-only. The first
    failure (in the order of ``names``) is raised after the running notebooks finish.
    """
    unknown = [n for n in names if n not in EXPERIMENTS]
    if unknown:
        raise ExperimentFailed(f"unknown experiment(s) {unknown}; choose from p1, p2, p3")
    prereg_file = Path(preregistration_path).resolve() if preregistration_path else None
    overrides, direct = split_parameters(names, params or {})
    # validate the file and every override before running anything; resolved here, in the
    # folder reflect runs in, and handed to the notebooks as this exact file
    # the notebooks and library code this run executes, compared with the code the lock
    # registers; with the file, before anything runs
    source_dir, chosen = notebooks_source()
    executed = [EXPERIMENTS[n] for n in names] + ([SUMMARY_NOTEBOOK] if summary_notebook else [])
    code = executed_code(source_dir, executed)
    prereg = load_for_run(
        prereg_file, overrides, code=code, notebooks_from=f"{chosen} ({source_dir})"
    )
    db = _database(db_path)
    # create any missing table now (the notebooks open it read-only) and refuse a parameter
    # the data cannot answer before a report folder or a kernel exists
    con = connect(db)
    try:
        if "p1" in direct and prereg.p1.label_source == "corpus":
            direct["p1"] = check_corpus(con, db, direct["p1"])
    finally:
        con.close()
    root = Path(out_root).resolve()
    run_id = run_id or new_run_id(root)
    run_dir = root / run_id
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "FAILED.txt").unlink(missing_ok=True)
    kernel = ensure_kernel(kernel)
    # each notebook's papermill parameters: the overrides of its own section, its direct ones
    parameters = {
        name: {
            "db_path": str(db),
            "output_dir": str(run_dir / name),
            "preregistration_path": prereg.path,
            "overrides": {k: v for k, v in overrides.items() if k.startswith(f"{name}.")},
            **direct[name],
        }
        for name in names
    }
    lanes = max(1, min(jobs or DEFAULT_JOBS, len(names)))
    preloads = [EXPERIMENT_MODULES] * len(names) + ([SUMMARY_MODULES] if summary_notebook else [])
    pool = KernelPool(kernel, start_timeout=start_timeout, cwd=run_dir, preloads=preloads)
    notebooks: dict[str, Path] = {}

    def run(notebook: str, out_dir: Path, params: Mapping[str, Any]) -> Path:
        """One notebook in the pool's next kernel, into an emptied ``out_dir``, with its HTML.
        Once its kernel is ready, the next kernel to come is launched."""
        if out_dir.exists():
            shutil.rmtree(out_dir)
        return execute_notebook(
            source_dir / notebook,
            out_dir,
            params,
            kernel=kernel,
            start_timeout=start_timeout,
            execution_timeout=execution_timeout,
            pooled=pool.take(),
            on_ready=lambda: pool.start_ahead(KERNELS_AHEAD),
        )

    with pool, ThreadPoolExecutor(max_workers=lanes) as executor:
        pool.start_ahead(lanes)
        # hashed while the kernels boot, before any notebook reads the database
        before = _data_read(db, names, prereg)
        running = {
            name: executor.submit(run, EXPERIMENTS[name], run_dir / name, parameters[name])
            for name in names
        }
        try:
            failures = {}
            for name, future in running.items():
                try:
                    notebooks[name] = future.result()
                except NotebookFailed as exc:
                    failures[name] = exc
            if failures:
                raise ExperimentFailed(str(next(iter(failures.values()))))
            assert prereg.registration is not None  # load_for_run always checks the lock
            checks = RunChecks(prereg, _registered_or_none(), code, f"{chosen} ({source_dir})")
            docs, figures = _read_results(run_dir, names, notebooks, checks, before)
            summary = None
            if summary_notebook:
                summary = executor.submit(
                    run,
                    SUMMARY_NOTEBOOK,
                    run_dir / "summary",
                    {"results_dir": str(run_dir), "output_dir": str(run_dir / "summary")},
                )
            # beside the summary notebook, which reads no database
            after = _data_read(db, names, prereg)
            for name, was in before.items():
                if after[name].fingerprint() != was.fingerprint():
                    raise ExperimentFailed(
                        f"{was.database} changed while {name} read it (rows or content hash "
                        f"of {', '.join(t.table for t in was.tables)}); run again when no load "
                        "runs"
                    )
            if summary is not None:
                try:
                    notebooks["summary"] = summary.result()
                except NotebookFailed as exc:
                    raise ExperimentFailed(str(exc)) from None
            gate = phase0_gate(docs)
        except ExperimentFailed as exc:
            (run_dir / "FAILED.txt").write_text(f"{exc}\n", "utf-8")
            raise
    index, summary_md = write_report(run_dir, run_id, docs, gate, figures, notebooks)
    return RunReport(run_id, run_dir, index, summary_md, docs, gate, notebooks)


def _data_read(
    db: Path, names: Sequence[str], prereg: Preregistration
) -> dict[str, DataProvenance]:
    """What each experiment reads in ``db`` (read-only, like the notebooks)."""
    con = connect(db, read_only=True)
    try:
        return {
            name: data_provenance(con, tables_read(name, prereg), database=str(db))
            for name in names
        }
    finally:
        con.close()


@dataclass(frozen=True)
class RunChecks:
    """What the runner compares each experiment's results with: the run's parameters (checked
    against the lock), the registered file's parameters (None: unreadable, with why), and the
    analysis code the run executed, its notebooks taken from ``notebooks_from``."""

    prereg: Preregistration
    registered: Preregistration | str
    code: Mapping[str, str]
    notebooks_from: str

    @property
    def registration(self) -> Registration:
        assert self.prereg.registration is not None  # load_for_run always checks the lock
        return self.prereg.registration

    def reasons(self, name: str, doc: Mapping[str, Any], data: DataProvenance) -> list[str]:
        """Why ``doc`` (experiment ``name``'s results) is not pre-registered beyond what the
        notebook said: the file or code against the lock, each parameter it used that is not
        the registered value (an override is named already), a registration made after the
        data it read were loaded."""
        reasons = list(self.registration.reasons)
        if isinstance(self.registered, str):
            reasons.append(self.registered)
        else:
            reasons += [
                d.reason()
                for d in parameter_differences(name, doc["parameters"], self.registered)
                if d.parameter not in self.prereg.overrides
            ]
        lock = self.registration.lock
        if lock is not None:
            loads = [ld for t in data.to_dict()["tables"] for ld in t["loads"]]
            late = amended_after_loads(lock, loads)
            if late is not None:
                reasons.append(late)
        return reasons

    def parameter_check(self, name: str, doc: Mapping[str, Any]) -> dict[str, Any]:
        """results.json ``parameter_check``: the registered values beside the used ones
        (``parameters``), and each difference."""
        if isinstance(self.registered, str):
            return {"registered_file": None, "registered": None, "differences": None}
        return {
            "registered_file": self.registered.path,
            "registered_sha256": self.registered.sha256,
            "registered": params_dict(getattr(self.registered, name)),
            "differences": [
                d.to_dict() for d in parameter_differences(name, doc["parameters"], self.registered)
            ],
        }

    def code_block(self) -> dict[str, Any]:
        """results.json ``code``: what the run executed, file by file, against the lock."""
        lock = self.registration.lock
        return {
            "sha256": code_sha256(self.code),
            "registered_sha256": lock.newest.code_sha256 if lock is not None else None,
            "notebooks_from": self.notebooks_from,
            "files": dict(sorted(self.code.items())),
        }


_BODY = re.compile(r"<body[^>]*>")


def _stamp_page(page: Path, reasons: Sequence[str]) -> None:
    """Open the experiment's rendered page with the reasons only the runner found (the
    notebook's own banner cannot know them), so the page never reads as pre-registered when
    the run is not."""
    if not page.is_file():
        return
    items = "".join(f"<li>{html.escape(r)}</li>" for r in reasons)
    stamp = (
        '<div style="border:2px solid #b00020;padding:0.5em 1em;margin:1em">'
        "<strong>⚠ EXPLORATORY RUN — not a pre-registered result</strong> (found by "
        f"<code>reflect run</code> after the notebook ran):<ul>{items}</ul></div>"
    )
    text = page.read_text("utf-8")
    body = _BODY.search(text)
    at = body.end() if body else 0
    page.write_text(text[:at] + stamp + text[at:], "utf-8")


def _registered_or_none() -> Preregistration | str:
    """The registered file's parameters, or why they cannot be read."""
    try:
        return load_preregistration(registered_preregistration_path())
    except InvalidPreregistration as exc:
        return (
            f"the registered pre-registration cannot be read, so no parameter was compared: {exc}"
        )


def _read_results(
    run_dir: Path,
    names: Sequence[str],
    notebooks: Mapping[str, Path],
    checks: RunChecks,
    data: Mapping[str, DataProvenance],
) -> tuple[dict[str, dict[str, Any]], dict[str, list[str]]]:
    """Each experiment's validated results.json, stamped with the run's registration (with the
    runner's route), what the run's parameters and code are against the registered ones, the
    data it read, and exploratory with every reason; and its figures. Raises
    ExperimentFailed."""
    registration = checks.registration
    docs: dict[str, dict[str, Any]] = {}
    figures: dict[str, list[str]] = {}
    for name in names:
        out_dir = run_dir / name
        results = out_dir / "results.json"
        if not results.is_file():
            raise ExperimentFailed(
                f"{EXPERIMENTS[name]} finished but wrote no results.json in {out_dir}\n"
                f"  executed notebook: {notebooks.get(name, '?')}"
            )
        try:
            docs[name] = read_results(results)
        except Exception as exc:
            raise ExperimentFailed(f"{results}: not a valid results.v1 document ({exc})") from None
        doc = docs[name]
        if doc["experiment"] != name:
            raise ExperimentFailed(f"{results}: holds {doc['experiment']}, not {name}")
        if doc["preregistration"]["sha256"] != registration.sha256:
            raise ExperimentFailed(
                f"{results}: the notebook used a pre-registration with SHA-256 "
                f"{doc['preregistration']['sha256']}, not the run's {registration.sha256}"
            )
        # the runner, not the notebook, has the last word: a notebook may say anything
        said = list(doc["preregistration"].get("exploratory_reasons") or [])
        added = [r for r in checks.reasons(name, doc, data[name]) if r not in said]
        if added:
            doc["exploratory"] = True
            doc["preregistration"]["exploratory"] = True
            doc["preregistration"]["exploratory_reasons"] = [*said, *added]
            _stamp_page(out_dir / "report.html", added)
        doc["registration"] = registration.to_dict()
        doc["parameter_check"] = checks.parameter_check(name, doc)
        doc["code"] = checks.code_block()
        doc["data"] = data[name].to_dict()
        write_results_doc(doc, results)
        figures[name] = sorted(f"{name}/{p.name}" for p in out_dir.glob("*.png"))
    return docs, figures


class InvalidParameters(ReflectionError, ValueError):
    """A ``--params`` file that is not a YAML mapping."""


def collect_parameters(
    pairs: Sequence[tuple[str, str]], params_file: str | Path | None = None
) -> dict[str, Any]:
    """A run's parameters: the YAML mapping of ``params_file``, then each ``-p NAME VALUE``
    pair (VALUE read as YAML, :func:`parse_value`; a later one wins)."""
    params: dict[str, Any] = {}
    if params_file:
        import yaml

        loaded = yaml.safe_load(Path(params_file).read_text("utf-8")) or {}
        if not isinstance(loaded, dict):
            raise InvalidParameters(f"{params_file}: must be a YAML mapping")
        params.update(loaded)
    for name, value in pairs:
        params[name] = parse_value(value)
    return params


def parse_value(text: str) -> Any:
    """A ``-p NAME VALUE`` value: YAML scalars and lists (``0.7``, ``true``, ``[0, 0.5, 1]``)."""
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return text


#: The analysis notebooks that are not pre-registered experiments, by ``reflect run`` command.
ANALYSES = {
    "in-loop": "in_loop.py",
    "cycle": "reflection_cycle.py",
    "agent-vs-human": "agent_vs_human.py",
}


def run_analysis(
    name: str,
    parameters: Mapping[str, Any],
    *,
    db_path: str | Path,
    out_root: str | Path = "reports",
    run_id: str | None = None,
    kernel: str | None = None,
    start_timeout: int = DEFAULT_START_TIMEOUT,
    execution_timeout: int = DEFAULT_EXECUTION_TIMEOUT,
) -> AnalysisRun:
    """Run the analysis notebook ``name`` (:data:`ANALYSES`) on ``db_path`` into
    ``out_root/<run-id>/<name>/``, with ``parameters`` beside the database and the output
    folder; its summary is read back."""
    db = _database(db_path)
    root = Path(out_root).resolve()
    out_dir = root / (run_id or new_run_id(root)) / name
    executed = execute_notebook(
        notebooks_dir() / ANALYSES[name],
        out_dir,
        {"db_path": str(db), "output_dir": str(out_dir), **parameters},
        kernel=ensure_kernel(kernel),
        start_timeout=start_timeout,
        execution_timeout=execution_timeout,
    )
    return AnalysisRun(executed, out_dir / "report.html", read_summary(out_dir))
