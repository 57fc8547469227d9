"""Execute the experiment notebooks with papermill and assemble ``reports/<run-id>/``.

For each experiment: the jupytext ``.py`` source becomes an ``.ipynb``, papermill executes it
(explicit kernel for this interpreter, start and cell timeouts, ``MPLBACKEND=Agg``, progress
bar only on a TTY), nbconvert renders ``report.html``, and the notebook writes ``results.json``
and figures. Then ``index.html`` and ``summary.md`` carry the verdicts and the Phase-0 gate.

Lanes (``--jobs``) take the experiments in turn. Each notebook gets a fresh kernel, started
while the notebooks before it run (:mod:`~agent_reflection.experiments.kernel_pool`).

A failed cell stops the run with :class:`ExperimentFailed` (output notebook, cell index,
error); no index or summary is written then, only ``FAILED.txt`` — never a half-report that
looks complete.

The runner resolves the pre-registration once (:func:`~agent_reflection.experiments.
preregistration.resolve_preregistration`, in the folder ``reflect`` runs in) and hands every
notebook that exact file; it records in each ``results.json`` the file's check against the lock
(``registration``, with the route that chose it) and what data the experiment read (``data``),
hashed before any notebook runs and again once the experiment notebooks are done (both beside
the kernels: :class:`_DataWatch`): a database that changed in between fails the run.
"""

from __future__ import annotations

import functools
import os
import shutil
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agent_reflection.errors import ReflectionError
from agent_reflection.experiments.gate import Gate, phase0_gate
from agent_reflection.experiments.kernel import (
    EXPERIMENT_MODULES,
    ensure_kernel,
    ipc_socket_prefix,
)
from agent_reflection.experiments.kernel_pool import KernelPool
from agent_reflection.experiments.preregistration import (
    SECTIONS,
    InvalidPreregistration,
    Preregistration,
    load_for_run,
    load_preregistration,
)
from agent_reflection.experiments.provenance import DataProvenance, data_provenance, tables_read
from agent_reflection.experiments.registration import Registration
from agent_reflection.experiments.report import write_report
from agent_reflection.experiments.results import read_results, write_results_doc
from agent_reflection.experiments.warm_kernel import WarmKernel
from agent_reflection.progress import progress_enabled
from agent_reflection.store.db import connect

EXPERIMENTS = {
    "p1": "p1_calibration.py",
    "p2": "p2_git_history.py",
    "p3": "p3_detectability.py",
}
SUMMARY_NOTEBOOK = "phase0_summary.py"
#: What a kernel started for the summary notebook imports ahead (what the notebook imports).
SUMMARY_MODULES = (
    "IPython.display",
    "agent_reflection.experiments.gate",
    "agent_reflection.experiments.report",
)
#: Kernels started ahead of their notebook at any one time. One is enough for the next notebook
#: to find its kernel ready; more would take CPU from the notebooks running (two CPUs here).
KERNELS_AHEAD = 1
#: Notebook parameters that are passed as themselves, not as pre-registration overrides.
DIRECT_PARAMETERS = {"p1": {"corpus"}, "p2": {"gate_labels"}, "p3": set()}
DEFAULT_START_TIMEOUT = 120
DEFAULT_EXECUTION_TIMEOUT = 1800
#: Lanes of a run (notebooks side by side): one per CPU, no more than there are experiments.
DEFAULT_JOBS = max(1, min(3, os.cpu_count() or 1))


class ExperimentFailed(ReflectionError, RuntimeError):
    """A notebook cell raised, or a notebook finished without a valid results.json."""


class NotebookNotFound(ReflectionError, FileNotFoundError):
    """The experiment notebooks (notebooks/*.py) cannot be found."""


@dataclass(frozen=True)
class RunReport:
    run_id: str
    run_dir: Path
    index_html: Path
    summary_md: Path
    results: Mapping[str, Mapping[str, Any]]
    gate: Gate
    notebooks: Mapping[str, Path] = field(default_factory=dict)


def notebooks_dir() -> Path:
    """``$REFLECT_NOTEBOOKS``, ./notebooks, the checkout's notebooks/ or the packaged copy."""
    env = os.environ.get("REFLECT_NOTEBOOKS")
    candidates = [Path(env)] if env else []
    candidates += [
        Path.cwd() / "notebooks",
        Path(__file__).resolve().parents[3] / "notebooks",
        Path(__file__).resolve().parents[1] / "notebooks",
    ]
    for c in candidates:
        if (c / EXPERIMENTS["p1"]).is_file():
            return c
    raise NotebookNotFound(
        f"experiment notebooks not found (looked in {', '.join(map(str, candidates))}); "
        "run from the repository root or set REFLECT_NOTEBOOKS"
    )


def split_parameters(
    names: Sequence[str], params: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """(pre-registration overrides ``{"p1.x": v}``, direct notebook parameters per experiment).

    A dotted name (``p1.high_confidence_threshold``) is an override of that section. A bare
    name must be a direct parameter (``corpus``) or a key of exactly one selected experiment's
    section; otherwise the error asks for the dotted name.
    """
    from dataclasses import fields

    prereg = load_preregistration()
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
        owners = [n for n in names if key in {f.name for f in fields(getattr(prereg, n))}]
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


def new_run_id(out_root: Path) -> str:
    base = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    run_id, i = base, 1
    while (out_root / run_id).exists():
        i += 1
        run_id = f"{base}-{i}"
    return run_id


def _to_ipynb(source: Path, target: Path, kernel: str) -> None:
    import jupytext
    import nbformat

    nb = jupytext.read(source)
    nb.metadata["kernelspec"] = {"name": kernel, "display_name": kernel, "language": "python"}
    nb.metadata.setdefault("jupytext", {})["source_file"] = str(source)
    nbformat.write(nb, target)  # type: ignore[no-untyped-call]


def _failed_cell(output: Path) -> tuple[int | None, str]:
    """(index of the first cell with an error output, its error) from an executed notebook."""
    import nbformat

    try:
        nb = nbformat.read(output, as_version=4)  # type: ignore[no-untyped-call]
    except (OSError, ValueError):
        return None, ""
    for i, cell in enumerate(nb.cells):
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                return i, f"{out.get('ename')}: {out.get('evalue')}"
    return None, ""


def execute_notebook(
    source: Path,
    out_dir: Path,
    parameters: Mapping[str, Any],
    *,
    kernel: str,
    start_timeout: int = DEFAULT_START_TIMEOUT,
    execution_timeout: int = DEFAULT_EXECUTION_TIMEOUT,
    html: bool = True,
    pooled: WarmKernel | None = None,
    on_ready: Callable[[], None] | None = None,
) -> Path:
    """Run one jupytext notebook; returns the executed .ipynb. Raises ExperimentFailed.

    With ``pooled`` the notebook runs in that kernel (a pool's, perhaps started ahead); else
    in a new kernel papermill starts. ``on_ready`` is called once that kernel is ready, as the
    notebook starts.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    os.environ["MPLBACKEND"] = "Agg"  # inherited by the kernel: headless plotting
    if pooled is not None:
        # boots while papermill is imported and the notebook converted; a failure here is
        # not lost: prepare() launches again and reports it below
        try:
            pooled.launch(out_dir)
        except Exception:
            pooled.discard()
    import papermill
    from papermill.exceptions import PapermillExecutionError

    stem = source.stem
    input_nb = out_dir / f"{stem}.input.ipynb"
    output_nb = out_dir / f"{stem}.ipynb"
    _to_ipynb(source, input_nb, kernel)
    if pooled is not None:
        try:
            pooled.prepare(out_dir)
        except Exception as exc:
            pooled.discard()
            input_nb.unlink(missing_ok=True)
            raise ExperimentFailed(
                f"{source.name}: the kernel {kernel!r} did not start: {type(exc).__name__}: {exc}"
            ) from None
        kernel_args: dict[str, Any] = {"km": pooled.km}
    else:
        kernel_args = {"cwd": str(out_dir), "config": _local_kernel_config()}
    if on_ready is not None:
        try:
            on_ready()
        except BaseException:
            input_nb.unlink(missing_ok=True)
            raise
    try:
        papermill.execute_notebook(
            str(input_nb),
            str(output_nb),
            parameters=dict(parameters),
            kernel_name=kernel,
            start_timeout=start_timeout,
            execution_timeout=execution_timeout,
            progress_bar=progress_enabled(),
            log_output=False,
            **kernel_args,
        )
    except Exception as exc:
        if pooled is not None:
            pooled.discard()  # a kernel is never reused after a failure
        index, error = _failed_cell(output_nb)
        if isinstance(exc, PapermillExecutionError):
            raise ExperimentFailed(
                f"{source.name} failed in cell {index if index is not None else '?'} "
                f"(execution count {exc.exec_count}): {exc.ename}: {exc.evalue}\n"
                f"  executed notebook: {output_nb}"
            ) from None
        # the kernel died, timed out or could not start
        where = f" in cell {index}" if index is not None else ""
        raise ExperimentFailed(
            f"{source.name} did not finish{where}: {type(exc).__name__}: {exc}"
            f"{' — ' + error if error else ''}\n  executed notebook: {output_nb}"
        ) from None
    finally:
        input_nb.unlink(missing_ok=True)
    if html:
        _to_html(output_nb, out_dir / "report.html")
    return output_nb


def _local_kernel_config() -> Any:
    """A new kernel talks over IPC sockets of its own (:func:`ipc_socket_prefix`)."""
    from traitlets.config import Config

    return Config({"KernelManager": {"transport": "ipc", "ip": ipc_socket_prefix()}})


_html_lock = threading.Lock()


@functools.cache
def _html_exporter() -> Any:
    """One exporter per process: compiling its Jinja templates costs more than a render."""
    from nbconvert import HTMLExporter

    return HTMLExporter()  # type: ignore[no-untyped-call]


def _to_html(notebook: Path, target: Path) -> None:
    import nbformat

    nb = nbformat.read(notebook, as_version=4)  # type: ignore[no-untyped-call]
    with _html_lock:
        body, _ = _html_exporter().from_notebook_node(nb)
    target.write_text(body, "utf-8")


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

    ``jobs`` lanes (default :data:`DEFAULT_JOBS`) run side by side, each taking the next
    experiment when it is free; the last lane to finish runs the summary notebook. Every
    notebook runs in a fresh kernel, started while the notebooks before it ran. The notebooks
    open the database read-only. The first failure is raised after the running notebooks
    finish.
    """
    unknown = [n for n in names if n not in EXPERIMENTS]
    if unknown:
        raise ExperimentFailed(f"unknown experiment(s) {unknown}; choose from p1, p2, p3")
    prereg_file = Path(preregistration_path).resolve() if preregistration_path else None
    overrides, direct = split_parameters(names, params or {})
    # validate the file and every override before running anything; resolved here, in the
    # folder reflect runs in, and handed to the notebooks as this exact file
    prereg = load_for_run(prereg_file, overrides)
    db = Path(db_path).resolve()
    if not db.is_file():
        raise ExperimentFailed(f"{db}: no such database; load data first or pass --db")
    # create any missing table now (the notebooks open it read-only) and refuse a parameter
    # the data cannot answer before a report folder or a kernel exists
    con = connect(db)
    try:
        if "p1" in direct and prereg.p1.label_source == "corpus":
            direct["p1"] = check_corpus(con, db, direct["p1"])
    finally:
        con.close()
    source_dir = notebooks_dir()
    run_id, run_dir = _new_run_dir(Path(out_root).resolve(), run_id)
    kernel = ensure_kernel(kernel)
    with _DataWatch(db, names, prereg) as watch:
        lanes = _Lanes(
            names=names,
            run_dir=run_dir,
            source_dir=source_dir,
            parameters=_notebook_parameters(names, db, run_dir, prereg.path, overrides, direct),
            registration=_registration(prereg),
            watch=watch,
            kernel=kernel,
            start_timeout=start_timeout,
            execution_timeout=execution_timeout,
            summary_notebook=summary_notebook,
            lanes=max(1, min(jobs or DEFAULT_JOBS, len(names))),
        )
        try:
            lanes.run()
            lanes.raise_first_failure()
            watch.check_unchanged()
            docs, figures = lanes.collected or _read_results(
                run_dir, names, lanes.notebooks, lanes.stamp()
            )
            gate = phase0_gate(docs)
        except ExperimentFailed as exc:
            (run_dir / "FAILED.txt").write_text(f"{exc}\n", "utf-8")
            raise
    index, summary = write_report(run_dir, run_id, docs, gate, figures)
    return RunReport(run_id, run_dir, index, summary, docs, gate, lanes.notebooks)


def _new_run_dir(root: Path, run_id: str | None) -> tuple[str, Path]:
    """(the run's id, its folder under ``root``, created, without an old ``FAILED.txt``)."""
    run_id = run_id or new_run_id(root)
    run_dir = root / run_id
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "FAILED.txt").unlink(missing_ok=True)
    return run_id, run_dir


def _notebook_parameters(
    names: Sequence[str],
    db: Path,
    run_dir: Path,
    preregistration_path: str,
    overrides: Mapping[str, Any],
    direct: Mapping[str, Mapping[str, Any]],
) -> dict[str, dict[str, Any]]:
    """Each experiment notebook's papermill parameters: the database, its output folder, the
    run's pre-registration file, the overrides of its own section and its direct parameters."""
    return {
        name: {
            "db_path": str(db),
            "output_dir": str(run_dir / name),
            "preregistration_path": preregistration_path,
            "overrides": {k: v for k, v in overrides.items() if k.startswith(f"{name}.")},
            **direct[name],
        }
        for name in names
    }


@dataclass
class _Lane:
    """One lane's own things: the HTML renders it queued."""

    html_pool: ThreadPoolExecutor
    rendered: list[Future[None]] = field(default_factory=list)


@dataclass(eq=False)
class _Lanes:
    """The lanes of one run, side by side: each takes the next experiment when it is free; the
    last lane to finish runs the summary notebook. ``state`` guards what lanes share (the
    queue, lanes done, failures, whether the summary started)."""

    names: Sequence[str]
    run_dir: Path
    source_dir: Path
    parameters: Mapping[str, Mapping[str, Any]]
    registration: Registration
    watch: _DataWatch
    kernel: str
    start_timeout: int
    execution_timeout: int
    summary_notebook: bool
    lanes: int
    notebooks: dict[str, Path] = field(default_factory=dict, init=False)
    failures: dict[str, ExperimentFailed] = field(default_factory=dict, init=False)
    collected: tuple[dict[str, dict[str, Any]], dict[str, list[str]]] | None = field(
        default=None, init=False
    )
    queue: list[str] = field(init=False)
    lanes_done: int = field(default=0, init=False)
    summary_started: bool = field(default=False, init=False)
    state: threading.Condition = field(default_factory=threading.Condition, init=False)
    pool: KernelPool = field(init=False)
    cpus: int = field(default_factory=lambda: os.cpu_count() or 1, init=False)

    def __post_init__(self) -> None:
        self.queue = list(self.names)  # a lane takes the next experiment when it is free
        self.pool = KernelPool(self.kernel, start_timeout=self.start_timeout, ahead=KERNELS_AHEAD)

    def run(self) -> None:
        """Run every lane to its end, close the kernels started ahead, wait for the HTML."""
        with ThreadPoolExecutor(max_workers=1) as html_pool:
            try:
                with ThreadPoolExecutor(max_workers=self.lanes) as lanes_pool:
                    lane_jobs = [
                        lanes_pool.submit(self._run_lane, html_pool) for _ in range(self.lanes)
                    ]
                    rendered = [job for lane_job in lane_jobs for job in lane_job.result()]
            finally:
                self.pool.close()  # kernels started for notebooks that did not come
            for job in rendered:
                job.result()

    def stamp(self) -> _Stamp:
        """What the runner adds to each results.json (the data as read before the notebooks)."""
        return _Stamp(self.registration, self.watch.before())

    def raise_first_failure(self) -> None:
        """Raise the failure of the first experiment (in the order asked), then the summary's."""
        for name in [*self.names, "summary"]:
            if name in self.failures:
                raise self.failures[name]

    def _run_lane(self, html_pool: ThreadPoolExecutor) -> list[Future[None]]:
        """One lane: experiments from the queue, then the summary if it finished last. Returns
        the HTML renders it queued."""
        lane = _Lane(html_pool)
        last = self._run_queue(lane)
        # the summary reads every results.json: the last lane runs it
        if last and self.summary_notebook and not self.failures:
            self._run_summary(lane)
        return lane.rendered

    def _run_queue(self, lane: _Lane) -> bool:
        """Run experiments until the queue is empty; whether this lane was the last to finish."""
        try:
            while (name := self._next_experiment()) is not None:
                try:
                    self.notebooks[name] = self._run_notebook(
                        lane,
                        self.source_dir / EXPERIMENTS[name],
                        self.run_dir / name,
                        self.parameters[name],
                        EXPERIMENT_MODULES,
                    )
                except ExperimentFailed as exc:
                    self.failures[name] = exc
        finally:  # always counted: HTML waits on it
            with self.state:
                self.lanes_done += 1
                last = self.lanes_done == self.lanes
                self.state.notify_all()
        return last

    def _next_experiment(self) -> str | None:
        """The next experiment of the queue, taken off it (None: the queue is empty)."""
        with self.state:
            return self.queue.pop(0) if self.queue else None

    def _run_summary(self, lane: _Lane) -> None:
        """Collect the experiments' results, then run the summary notebook over them."""
        with self.state:
            self.summary_started = True
        self.watch.experiments_done()  # the data read again beside the summary notebook
        try:
            self.collected = _read_results(self.run_dir, self.names, self.notebooks, self.stamp())
            self.notebooks["summary"] = self._run_notebook(
                lane,
                self.source_dir / SUMMARY_NOTEBOOK,
                self.run_dir / "summary",
                {"results_dir": str(self.run_dir), "output_dir": str(self.run_dir / "summary")},
                SUMMARY_MODULES,
            )
        except ExperimentFailed as exc:
            self.failures["summary"] = exc

    def _run_notebook(
        self,
        lane: _Lane,
        source: Path,
        out_dir: Path,
        params: Mapping[str, Any],
        modules: tuple[str, ...],
    ) -> Path:
        """Execute one notebook in a fresh kernel (preloading ``modules``), into an emptied
        ``out_dir``; queue its HTML. Raises ExperimentFailed."""
        if out_dir.exists():
            shutil.rmtree(out_dir)
        this = self.pool.take(modules)
        try:
            executed = execute_notebook(
                source,
                out_dir,
                params,
                kernel=self.kernel,
                start_timeout=self.start_timeout,
                execution_timeout=self.execution_timeout,
                html=False,
                pooled=this,
                on_ready=self._before_notebook,
            )
        finally:
            this.discard()  # never reused
        lane.rendered.append(lane.html_pool.submit(self._render, executed, out_dir / "report.html"))
        return executed

    def _before_notebook(self) -> None:
        """Once a notebook's kernel is ready, before the notebook runs: wait until the data it
        reads were hashed (they are, in a thread of their own, while the first kernels boot),
        and start kernels for the notebooks still to come, so they boot and import while this
        one runs."""
        self.watch.before()
        with self.state:
            to_come: list[tuple[str, ...]] = [EXPERIMENT_MODULES] * len(self.queue)
            if self.summary_notebook and not self.summary_started and not self.failures:
                to_come.append(SUMMARY_MODULES)
        self.pool.start_ahead(self.run_dir, to_come)

    def _render(self, executed: Path, target: Path) -> None:
        """Render a notebook's HTML once a CPU has no lane left to run, so it never slows the
        notebooks still running (on two CPUs with two lanes: once one lane is done)."""
        with self.state:
            self.state.wait_for(lambda: self.lanes - self.lanes_done < self.cpus)
        _to_html(executed, target)


@dataclass(frozen=True)
class _Stamp:
    """What the runner adds to each results.json: the registration check and the data read."""

    registration: Registration
    data: Mapping[str, DataProvenance]

    def apply(self, name: str, doc: dict[str, Any], path: Path) -> None:
        """Record the registration (with the runner's route) and the data in ``doc``."""
        registration = self.registration
        if doc["preregistration"]["sha256"] != registration.sha256:
            raise ExperimentFailed(
                f"{path}: the notebook used a pre-registration with SHA-256 "
                f"{doc['preregistration']['sha256']}, not the run's {registration.sha256}"
            )
        if not registration.matches and not doc["exploratory"]:
            raise ExperimentFailed(
                f"{path}: says pre-registered, but {'; '.join(registration.reasons)}"
            )
        doc["registration"] = registration.to_dict()
        doc["data"] = self.data[name].to_dict()
        write_results_doc(doc, path)


class _DataWatch:
    """What each experiment reads in the database, hashed in a thread of its own: first while
    the kernels start (every notebook waits for it before it runs), then again once the
    experiment notebooks are done, beside the summary notebook (which reads no database). A
    database that changed in between fails the run."""

    def __init__(self, db: Path, names: Sequence[str], prereg: Preregistration) -> None:
        self._read = functools.partial(_data_read, db, names, prereg)
        self._reader = ThreadPoolExecutor(max_workers=1)
        self._before = self._reader.submit(self._read)
        self._after: Future[dict[str, DataProvenance]] | None = None
        self._lock = threading.Lock()

    def __enter__(self) -> _DataWatch:
        return self

    def __exit__(self, *_exc: object) -> None:
        self._reader.shutdown(wait=True, cancel_futures=True)

    def before(self) -> dict[str, DataProvenance]:
        """The data as they were before any notebook ran (waits for the first read)."""
        return self._before.result()

    def experiments_done(self) -> None:
        """Start the second read (once): no experiment notebook reads the database now."""
        with self._lock:
            if self._after is None:
                self._after = self._reader.submit(self._read)

    def check_unchanged(self) -> None:
        """Raise ExperimentFailed when the second read differs from the first."""
        self.experiments_done()
        assert self._after is not None
        after = self._after.result()
        for name, before in self.before().items():
            if after[name].fingerprint() != before.fingerprint():
                raise ExperimentFailed(
                    f"{before.database} changed while {name} read it (rows or content hash of "
                    f"{', '.join(t.table for t in before.tables)}); run again when no load runs"
                )


def _registration(prereg: Preregistration) -> Registration:
    if prereg.registration is None:  # pragma: no cover - load_for_run always sets it
        raise ExperimentFailed("the pre-registration was loaded without its lock check")
    return prereg.registration


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


def _read_results(
    run_dir: Path, names: Sequence[str], notebooks: Mapping[str, Path], stamp: _Stamp
) -> tuple[dict[str, dict[str, Any]], dict[str, list[str]]]:
    """Each experiment's validated results.json, stamped with the run's registration and data,
    and its figures. Raises ExperimentFailed."""
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
        if docs[name]["experiment"] != name:
            raise ExperimentFailed(f"{results}: holds {docs[name]['experiment']}, not {name}")
        stamp.apply(name, docs[name], results)
        figures[name] = sorted(f"{name}/{p.name}" for p in out_dir.glob("*.png"))
    return docs, figures


def parse_value(text: str) -> Any:
    """A ``-p NAME VALUE`` value: YAML scalars and lists (``0.7``, ``true``, ``[0, 0.5, 1]``)."""
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return text
