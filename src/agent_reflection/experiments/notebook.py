"""Small helpers the experiment notebooks call, so the notebooks stay thin."""

from __future__ import annotations

import dataclasses
import html
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import duckdb
from matplotlib.figure import Figure

from agent_reflection import config
from agent_reflection.errors import ReflectionError
from agent_reflection.experiments.registration import Preregistration, load_for_run
from agent_reflection.experiments.report import (
    NOT_SHOWN,
    SIMULATED_TAG,
    experiment_summary,
    number_text,
    touches,
)
from agent_reflection.experiments.results import ExperimentResult
from agent_reflection.store.db import connect, read_sql, require_database, simulated_origin

REQUIRED_TABLES = {
    "labels",
    "reflections",
    "commits",
    "commit_files",
    "tasks",
    "task_events",
    "task_links",
    "task_commits",
}


class InvalidOverrides(ReflectionError, ValueError):
    """A notebook's ``overrides`` parameter that is not a mapping of ``section.key`` to value."""


#: How to pass overrides to a notebook, said by :class:`InvalidOverrides`.
OVERRIDES_EXAMPLE = (
    "e.g. papermill ... -y '{overrides: {p1.high_confidence_threshold: 0.7}}', or -p overrides "
    "'{\"p1.high_confidence_threshold\": 0.7}' (a JSON or YAML text is read as the mapping)"
)


def overrides_mapping(overrides: Any) -> dict[str, Any]:
    """The ``overrides`` parameter as ``{"section.key": value}``: a mapping as it is, a JSON or
    YAML text (``papermill -p overrides '{...}'`` passes one) read as one; a section's mapping
    (``{"p1": {"high_confidence_threshold": 0.7}}``) gives its dotted keys. Anything else is
    :class:`InvalidOverrides` saying how to pass them."""
    if overrides is None or overrides == "":
        return {}
    if isinstance(overrides, str):
        import yaml

        try:
            overrides = yaml.safe_load(overrides)
        except yaml.YAMLError as exc:
            first = str(exc).splitlines()[0]
            raise InvalidOverrides(
                f"overrides: the text is neither JSON nor YAML ({first}); {OVERRIDES_EXAMPLE}"
            ) from None
        if overrides is None:
            return {}
    if not isinstance(overrides, Mapping):
        raise InvalidOverrides(
            f"overrides must be a mapping of section.key to value, not a "
            f"{type(overrides).__name__} ({overrides!r}); {OVERRIDES_EXAMPLE}"
        )
    flat: dict[str, Any] = {}
    for key, value in overrides.items():
        if isinstance(value, Mapping) and "." not in str(key):
            flat.update({f"{key}.{sub}": v for sub, v in value.items()})
        else:
            flat[str(key)] = value
    return flat


def prepare(preregistration_path: str, overrides: Mapping[str, Any] | str) -> Preregistration:
    """The run's parameters: the pre-registration file, checked against the lock, with the
    overrides applied (:func:`overrides_mapping`: a JSON or YAML text is read too). ``""``
    resolves the file as ``reflect run`` does; ``reflect run`` passes the file it resolved
    (and records the route that chose it in results.json)."""
    return load_for_run(preregistration_path or None, overrides_mapping(overrides))


def open_db(db_path: str) -> duckdb.DuckDBPyConnection:
    """The database, read-only (several notebooks may read it at once): ``db_path``, or with
    ``""`` the workspace's, found from the kernel's folder upward as ``reflect`` finds it (a
    notebook opened in JupyterLab runs in ``notebooks/``). A missing one is
    ``store.db.MissingDatabase`` saying where it looked.

    A database that lacks a table the experiments read is first brought up to the current
    schema (a brief read-write open).
    """
    if db_path == ":memory:":
        return connect(db_path)
    db = require_database(db_path or None, given_as="the notebook's db_path")
    con = connect(db, read_only=True)
    present = {r[0] for r in con.execute(read_sql("experiments/notebook_tables.sql")).fetchall()}
    if not present >= REQUIRED_TABLES:
        con.close()
        connect(db).close()
        con = connect(db, read_only=True)
    return con


def output_folder(output_dir: str, name: str) -> str:
    """``output_dir``, or with ``""`` the folder ``name`` under the workspace's reports
    (``reports/`` in it, unless its project file or ``$REFLECT_REPORTS`` says otherwise)."""
    if output_dir:
        return output_dir
    reports, _ = config.find_workspace().path(config.REPORTS)
    return str(Path(reports) / name)


def banner(
    prereg: Preregistration, simulated: str | None = None, experiment: str | None = None
) -> str:
    """Markdown shown at the top of every notebook page: pre-registered or EXPLORATORY (with
    every reason), and when the pre-registration was frozen and amended (the amendments that
    may touch ``experiment``); first, for data a simulator made, what made it
    (``simulated``)."""
    if simulated:  # the summary above it carries the warning; this says what made the data
        return f"**Simulated by {simulated}.**\n\n" + banner(prereg, experiment=experiment)
    registered = registration_markdown(prereg, experiment)
    if prereg.exploratory:
        reasons = "\n".join(f"- {r}" for r in prereg.reasons)
        return (
            "## ⚠ EXPLORATORY RUN — not a pre-registered result\n\n"
            f"{reasons}\n\n"
            f"Pre-registration `{prereg.path}`, SHA-256 `{prereg.sha256}`.{registered}"
        )
    return (
        "**Pre-registered run.** Parameters are those of "
        f"`{prereg.path}` (SHA-256 `{prereg.sha256}`).{registered}"
    )


def show_opening(
    doc: Mapping[str, Any],
    prereg: Preregistration,
    con: duckdb.DuckDBPyConnection | None = None,
) -> None:
    """Display what every experiment report opens with: its summary (question, verdict, number,
    n, what would change it) from the results document ``doc``, then the :func:`banner`.
    When the database ``con`` holds simulated data (``reflect demo``) both say SIMULATED."""
    from IPython.display import Markdown, display

    simulated = simulated_origin(con) if con is not None else None
    summary = dataclasses.replace(experiment_summary(doc), simulated=simulated is not None)
    display(Markdown(summary.markdown()))  # type: ignore[no-untyped-call]
    page_banner = banner(as_run(doc, prereg), simulated, doc.get("experiment"))
    display(Markdown(page_banner))  # type: ignore[no-untyped-call]


def as_run(doc: Mapping[str, Any], prereg: Preregistration) -> Preregistration:
    """``prereg`` as the experiment judged the run: exploratory with the reasons of its results
    document ``doc`` (an experiment adds one when its data were read while the registration was
    written, experiments/registration.py)."""
    block = doc.get("preregistration") or {}
    reasons = tuple(block.get("exploratory_reasons") or prereg.reasons)
    return dataclasses.replace(
        prereg, exploratory=bool(doc.get("exploratory", prereg.exploratory)), reasons=reasons
    )


def registration_markdown(prereg: Preregistration, experiment: str | None = None) -> str:
    """ " Registered <date> …" with each amendment's date and reason ("" without a lock); with
    ``experiment``, only the amendments that may touch it (:func:`~.report.touches`), and a
    count of the others."""
    registration = prereg.registration
    lock = registration.lock if registration is not None else None
    if lock is None:
        return ""
    text = f" The registered pre-registration was frozen {lock.frozen.at} ({lock.frozen.reason})."
    shown = [a for a in lock.amendments if experiment is None or touches(a.reason, (experiment,))]
    if shown:
        # folded (raw HTML, which JupyterLab and nbconvert pass through): the reasons are long
        items = "".join(
            f"<li>amended {html.escape(a.at)}: {html.escape(a.reason)}</li>" for a in shown
        )
        which = f" that may touch {experiment.upper()}" if experiment else ""
        others = len(lock.amendments) - len(shown)
        if others:
            items += (
                f"<li>{NOT_SHOWN} {others} amendment(s) naming only other experiments "
                "(<code>reflect prereg status</code> lists every one)</li>"
            )
        text += (
            f"\n\n<details><summary>{len(shown)} amendment(s){which}, the newest "
            f"{html.escape(shown[-1].at)} (open for each one's date and reason)"
            f"</summary><ul>{items}</ul></details>\n"
        )
    return text


def verdict_markdown(result: ExperimentResult, con: duckdb.DuckDBPyConnection | None = None) -> str:
    """The verdict section: the verdict, the number, the rule and the notes; tagged SIMULATED
    when the database ``con`` holds simulated data."""
    tag = f" ({SIMULATED_TAG})" if con is not None and simulated_origin(con) else ""
    lines = [
        f"### Verdict: **{result.label.upper()}**{tag}",
        f"- {number_text(result.metric.to_dict())}, n = {result.n}",
        f"- pre-registered rule: {result.kill_condition}",
        *(f"- {note}" for note in result.notes),
    ]
    if result.exploratory:
        lines.insert(0, "**EXPLORATORY — not a pre-registered result.**")
    return "\n".join(lines)


def figure(fig: Figure, output_dir: str | Path, name: str) -> Any:
    """Save ``fig`` as ``output_dir/name.png`` and return it as an image for the notebook."""
    from IPython.display import Image

    path = Path(output_dir) / f"{name}.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    return Image(filename=str(path))  # type: ignore[no-untyped-call]


def write_results(result: ExperimentResult, output_dir: str | Path) -> Path:
    # validated by the runner (keeps jsonschema's slow import out of every kernel)
    return result.write_json(Path(output_dir) / "results.json", validate=False)


def write_text(text: str, output_dir: str | Path, name: str) -> Path:
    """Write ``text`` as ``output_dir/name`` beside the report (e.g. a table's CSV)."""
    path = Path(output_dir) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path
