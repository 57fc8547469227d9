"""Small helpers the experiment notebooks call, so the notebooks stay thin."""

from __future__ import annotations

import dataclasses
import html
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import duckdb
from matplotlib.figure import Figure

from agent_reflection.errors import ReflectionError
from agent_reflection.experiments.registration import Preregistration, load_for_run
from agent_reflection.experiments.report import experiment_summary, number_text
from agent_reflection.experiments.results import ExperimentResult
from agent_reflection.store.db import connect, read_sql

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


class MissingDatabase(ReflectionError, FileNotFoundError):
    """The database the experiments should read does not exist."""


def prepare(preregistration_path: str, overrides: Mapping[str, Any]) -> Preregistration:
    """The run's parameters: the pre-registration file, checked against the lock, with the
    overrides applied. ``""`` resolves the file as ``reflect run`` does; ``reflect run`` passes
    the file it resolved (and records the route that chose it in results.json)."""
    return load_for_run(preregistration_path or None, overrides or {})


def open_db(db_path: str) -> duckdb.DuckDBPyConnection:
    """The database, read-only (several notebooks may read it at once).

    A database that lacks a table the experiments read is first brought up to the current
    schema (a brief read-write open).
    """
    if db_path == ":memory:":
        return connect(db_path)
    if not Path(db_path).is_file():
        raise MissingDatabase(
            f"{db_path}: no such database; load data first (reflect load ...), then set the "
            "notebook's db_path parameter (reflect run ... --db sets it)"
        )
    con = connect(db_path, read_only=True)
    present = {r[0] for r in con.execute(read_sql("experiments/notebook_tables.sql")).fetchall()}
    if not present >= REQUIRED_TABLES:
        con.close()
        connect(db_path).close()
        con = connect(db_path, read_only=True)
    return con


def banner(prereg: Preregistration) -> str:
    """Markdown shown at the top of every notebook page: pre-registered or EXPLORATORY (with
    every reason), and when the pre-registration was frozen and amended."""
    registered = registration_markdown(prereg)
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


def show_opening(doc: Mapping[str, Any], prereg: Preregistration) -> None:
    """Display what every experiment report opens with: its summary (question, verdict, number,
    n, what would change it) from the results document ``doc``, then the :func:`banner`."""
    from IPython.display import Markdown, display

    display(Markdown(experiment_summary(doc).markdown()))  # type: ignore[no-untyped-call]
    display(Markdown(banner(as_run(doc, prereg))))  # type: ignore[no-untyped-call]


def as_run(doc: Mapping[str, Any], prereg: Preregistration) -> Preregistration:
    """``prereg`` as the experiment judged the run: exploratory with the reasons of its results
    document ``doc`` (an experiment adds one when its data were read while the registration was
    written, experiments/registration.py)."""
    block = doc.get("preregistration") or {}
    reasons = tuple(block.get("exploratory_reasons") or prereg.reasons)
    return dataclasses.replace(
        prereg, exploratory=bool(doc.get("exploratory", prereg.exploratory)), reasons=reasons
    )


def registration_markdown(prereg: Preregistration) -> str:
    """ " Registered <date> …" with each amendment's date and reason ("" without a lock)."""
    registration = prereg.registration
    lock = registration.lock if registration is not None else None
    if lock is None:
        return ""
    text = f" The registered pre-registration was frozen {lock.frozen.at} ({lock.frozen.reason})."
    if lock.amendments:
        # folded (raw HTML, which JupyterLab and nbconvert pass through): the reasons are long
        items = "".join(
            f"<li>amended {html.escape(a.at)}: {html.escape(a.reason)}</li>"
            for a in lock.amendments
        )
        text += (
            f"\n\n<details><summary>{len(lock.amendments)} amendment(s), the newest "
            f"{html.escape(lock.amendments[-1].at)} (open for each one's date and reason)"
            f"</summary><ul>{items}</ul></details>\n"
        )
    return text


def verdict_markdown(result: ExperimentResult) -> str:
    lines = [
        f"### Verdict: **{result.label.upper()}**",
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
