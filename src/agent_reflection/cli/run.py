"""``reflect run p1|p2|p3|all|demo``: execute the Phase-0 notebooks and write the report."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from agent_reflection.cli._groups import db_option, run_group
from agent_reflection.config import REPORTS, find_workspace


def _notebook_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """Options of every notebook run: database, output folder, run id, kernel, timeouts."""
    func = click.option(
        "--out",
        "out_dir",
        type=click.Path(file_okay=False),
        default=None,
        help="Reports folder; this run writes to OUT/<run-id>/. Default: $REFLECT_REPORTS, else "
        "the workspace's (its project file's `reports`, else reports/ in it).",
    )(func)
    func = click.option("--run-id", help="Name of the run folder (default: UTC timestamp).")(func)
    func = click.option(
        "--kernel", help="Jupyter kernel name (default: one registered for this Python)."
    )(func)
    func = click.option(
        "--start-timeout",
        type=click.IntRange(1),
        default=120,
        show_default=True,
        help="Seconds to wait for the kernel to start.",
    )(func)
    func = click.option(
        "--timeout",
        "execution_timeout",
        type=click.IntRange(1),
        default=1800,
        show_default=True,
        help="Seconds any one cell may run.",
    )(func)
    func = click.option(
        "--json",
        "as_json",
        is_flag=True,
        help="Print one JSON document on stdout (report paths, gate, each experiment's summary) "
        "and nothing else there.",
    )(func)
    func = click.option(
        "--silent", is_flag=True, help="Print nothing but errors (the report is still written)."
    )(func)
    return db_option(func)


def _options(func: Callable[..., Any]) -> Callable[..., Any]:
    """The experiments' options: the notebook options plus parameters and the pre-registration."""
    func = click.option(
        "-p",
        "--parameter",
        "parameters",
        nargs=2,
        multiple=True,
        metavar="NAME VALUE",
        help="Override a parameter, e.g. -p p1.high_confidence_threshold 0.7 (VALUE is YAML). "
        "Any value that differs from the pre-registration makes the run EXPLORATORY.",
    )(func)
    func = click.option(
        "--params",
        "params_file",
        type=click.Path(exists=True, dir_okay=False),
        help="YAML file of parameters ({p1: {high_confidence_threshold: 0.7}} or dotted keys).",
    )(func)
    func = click.option(
        "--prereg",
        "prereg_path",
        type=click.Path(exists=True, dir_okay=False),
        help="Pre-registration TOML. Default, first that applies: $REFLECT_PREREGISTRATION, "
        "./preregistration.toml, the registered file. Unless its SHA-256 is the one in the "
        "registered file's preregistration.lock, the run is EXPLORATORY (reflect prereg status).",
    )(func)
    func = click.option(
        "--jobs",
        type=click.IntRange(1),
        default=None,
        show_default="the number of CPUs, at most 3",
        help="Notebooks run side by side (lanes); each lane takes the next experiment when free.",
    )(func)
    return _notebook_options(func)


def _run(names: list[str], **kw: Any) -> None:
    from agent_reflection.execute.kernel import clean_up_on_sigterm
    from agent_reflection.experiments.runner import (
        InvalidParameters,
        collect_parameters,
        run_experiments,
    )
    from agent_reflection.store.db import require_database

    clean_up_on_sigterm()
    try:
        params = collect_parameters(kw["parameters"], kw["params_file"])
    except InvalidParameters as exc:
        raise click.BadParameter(str(exc), param_hint="--params") from None
    report = run_experiments(
        names,
        db_path=require_database(kw["db_path"]),
        out_root=find_workspace().path(REPORTS, cli=kw["out_dir"])[0],
        params=params,
        preregistration_path=kw["prereg_path"],
        run_id=kw["run_id"],
        kernel=kw["kernel"],
        start_timeout=kw["start_timeout"],
        execution_timeout=kw["execution_timeout"],
        jobs=kw["jobs"],
    )
    if kw["as_json"]:
        doc = report.to_dict()
        for name, step in empty_steps(report, kw["db_path"], kw["prereg_path"]).items():
            doc["experiments"][name]["next"] = step  # what to load: as `reflect status` says
        click.echo(json.dumps(doc, default=str))
    elif not kw["silent"]:
        print_verdicts(report)
        print_empty_hints(report, kw["db_path"], kw["prereg_path"])
        click.echo(report.gate.headline)
        click.echo(f"report: {report.index_html}")
        click.echo(f"summary: {report.summary_md}")


def empty_steps(report: Any, db_path: str | None, prereg_path: str | None) -> dict[str, str]:
    """For an experiment that had no data, what to load next (as `reflect status` says)."""
    from agent_reflection.experiments.registration import load_preregistration
    from agent_reflection.experiments.status import empty_run_steps
    from agent_reflection.store.db import resolve_db_path

    prereg = load_preregistration(prereg_path)
    return empty_run_steps(report.results, resolve_db_path(db_path), prereg)


def print_empty_hints(report: Any, db_path: str | None, prereg_path: str | None) -> None:
    """For an experiment that had no data, what to load next (as `reflect status` says)."""
    from agent_reflection.experiments.registration import load_preregistration
    from agent_reflection.experiments.status import empty_run_hints
    from agent_reflection.store.db import resolve_db_path

    prereg = load_preregistration(prereg_path)
    for line in empty_run_hints(report.results, resolve_db_path(db_path), prereg):
        click.echo(line)


def print_verdicts(report: Any) -> None:
    """Each experiment's verdict and rule, then the summary its report opens with."""
    for line in report.verdict_lines():
        click.echo(line)


@run_group.command("p1")
@_options
def run_p1_command(**kw: Any) -> None:
    """P1: AUC of self-rated confidence for correctness on the self-rated-high subset.

    \b
    Examples:
      reflect run p1 --db data/reflection.duckdb
      reflect run p1 -p corpus hle-verbalized-confidence
      reflect run p1 -p p1.label_source loop        # EXPLORATORY: differs from the file
    """
    _run(["p1"], **kw)


@run_group.command("p2")
@_options
def run_p2_command(**kw: Any) -> None:
    """P2: failure signals in git history bucketed into CI / human review / only self-reflection.

    The verdict reads the only-self-reflection share corrected by gate labels: the team's own
    ([p2] gate_labels_paths, or -p gate_labels with more CSV files), else the shipped ones,
    transported when none of the signals is labelled (the report says so).

    \b
    Examples:
      reflect run p2 --db data/reflection.duckdb --out reports
      reflect run p2 -p gate_labels '["labels/p2_gates.csv"]'
      reflect run p2 -p window_days 14              # EXPLORATORY
    """
    _run(["p2"], **kw)


@run_group.command("p3")
@_options
def run_p3_command(**kw: Any) -> None:
    """P3: fraction of completed tasks with a machine-readable outcome signal within 30 days.

    \b
    Examples:
      reflect run p3 --db data/reflection.duckdb
      reflect run p3 -p p3.as_of 2019-01-01T00:00:00+00:00
    """
    _run(["p3"], **kw)


@run_group.command("all")
@_options
def run_all_command(**kw: Any) -> None:
    """P1, P2 and P3, then reports/<run-id>/index.html and summary.md with the Phase-0 gate.

    The gate allows the closed calibration loop only if neither P1 nor P2 is killed; a P3
    kill adds a caveat. A failed cell exits non-zero naming the notebook, cell and error.

    \b
    Examples:
      reflect run all --db data/reflection.duckdb
      reflect run all --params my-params.yaml --out /tmp/reports
    """
    _run(["p1", "p2", "p3"], **kw)


def _run_analysis(name: str, parameters: dict[str, Any], **kw: Any) -> None:
    """Run one analysis notebook (not a pre-registered experiment) into OUT/<run-id>/NAME/."""
    from agent_reflection.execute.kernel import clean_up_on_sigterm
    from agent_reflection.experiments.runner import run_analysis
    from agent_reflection.store.db import require_database

    clean_up_on_sigterm()
    done = run_analysis(
        name,
        parameters,
        db_path=require_database(kw["db_path"]),
        out_root=find_workspace().path(REPORTS, cli=kw["out_dir"])[0],
        run_id=kw["run_id"],
        kernel=kw["kernel"],
        start_timeout=kw["start_timeout"],
        execution_timeout=kw["execution_timeout"],
    )
    if kw["as_json"]:
        click.echo(json.dumps(done.to_dict(), default=str))
    elif not kw["silent"]:
        for line in done.lines():
            click.echo(line)


@run_group.command("in-loop")
@_notebook_options
@click.option(
    "--agent-runs",
    "agent_runs_dir",
    type=click.Path(file_okay=False),
    default=None,
    show_default="$AGENT_REFLECTION_SHARED/data/agent-runs, else shared/data/agent-runs beside "
    "the checkout",
    help="Agent-run export (steps.jsonl.gz and runs.jsonl) replayed through the anti-loop "
    "detector; a relative path is taken from the current folder. When it is not there the "
    "replay skips it and the summary and the report say so.",
)
@click.option(
    "--transcripts",
    "transcripts_dir",
    type=click.Path(file_okay=False),
    default=None,
    show_default="$AGENT_REFLECTION_SHARED/data/claude-code, else shared/data/claude-code "
    "beside the checkout",
    help="Folder of Claude Code transcripts (*.jsonl) replayed through the detector (skipped, "
    "and said, as --agent-runs).",
)
def run_in_loop_command(agent_runs_dir: str | None, transcripts_dir: str | None, **kw: Any) -> None:
    """In-loop reflection: tool calls, checkpoints at cadences 5/7/10, escalations.

    Reads the transcript tables filled by `reflect load transcripts`, and replays the
    agent-run and transcript files through the anti-loop detector. The replay reads the
    files, not the database: the loaded tables keep neither a step's return code nor whole
    tool results, and the detector keys failures on them (docs/in-loop.md, "Replay inputs").

    \b
    Examples:
      reflect load transcripts ~/.claude/projects/my-project/
      reflect run in-loop
      reflect run in-loop --agent-runs ~/exports/agent-runs \\
          --transcripts ~/.claude/projects/my-project/
      AGENT_REFLECTION_SHARED=/data/shared reflect run in-loop  # reads its data/agent-runs
    """
    # the notebook runs in its output folder: a path the user gives is resolved here, from
    # where they stand; "" leaves the default to the notebook (replay_inputs.resolve:
    # $AGENT_REFLECTION_SHARED or beside the checkout, never the current folder), which also
    # says how to set an input that is missing
    parameters = {
        "agent_runs_dir": str(Path(agent_runs_dir).resolve()) if agent_runs_dir else "",
        "transcripts_dir": str(Path(transcripts_dir).resolve()) if transcripts_dir else "",
    }
    _run_analysis("in-loop", parameters, **kw)


@run_group.command("cycle")
@_notebook_options
@click.option(
    "--now",
    default="latest",
    show_default=True,
    help="Clock of the final rule pass: ISO-8601, epoch seconds, or 'latest' (newest outcome).",
)
@click.option(
    "--lookback",
    "lookback_seconds",
    type=click.IntRange(1),
    default=3600,
    show_default=True,
    help="Rule window in seconds (replayed logs need a window that fits their time span).",
)
def run_cycle_command(now: str, lookback_seconds: int, **kw: Any) -> None:
    """The reflection cycle replayed over loaded run logs: findings, streaks, skills.

    \b
    Examples:
      reflect load runs runs.jsonl && reflect run cycle
      reflect run cycle --now 2025-11-19T00:40:00Z --lookback 3600
    """
    _run_analysis("cycle", {"now": now, "lookback_seconds": lookback_seconds}, **kw)


@run_group.command("agent-vs-human")
@_notebook_options
@click.argument("repo_path", metavar="REPO")
@click.option(
    "--name",
    default="",
    help="The repo's name in the database (default: REPO's basename, as "
    "`reflect load git` names it).",
)
@click.option(
    "--head",
    default="",
    show_default="HEAD, else main, else master",
    help="The line of history to analyse: only commits reachable from it are compared.",
)
@click.option(
    "--cache-dir",
    type=click.Path(file_okay=False),
    envvar="REFLECT_CACHE_DIR",
    default=None,
    help="Where a bundle's clone is kept (as for `reflect load git`).",
)
@click.option(
    "--prereg",
    "prereg_path",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="Pre-registration TOML whose [agent_vs_human] section is used (default: as for "
    "`reflect run p1`).",
)
def run_agent_vs_human_command(
    repo_path: str, name: str, head: str, cache_dir: str | None, prereg_path: str | None, **kw: Any
) -> None:
    """EXPLORATORY: agent-authored vs human commits of one repository (not in the gate).

    Per group (commits with an agent mark in `commits.agent`, and the others, from the months
    that hold an agent commit): revert and fix rates with Wilson intervals, their difference,
    time to fix, and the share of added lines still at the head. Needs
    `reflect load git REPO --szz` first; REPO is read again for `git blame`.

    \b
    Examples:
      reflect load git ~/src/my-repo --szz
      reflect run agent-vs-human ~/src/my-repo --head main
      reflect run agent-vs-human my-repo.bundle     # a git bundle works too
    """
    from agent_reflection.experiments.agent_vs_human.analysis import notebook_parameters

    parameters = notebook_parameters(
        repo_path, name=name, head=head, cache_dir=cache_dir, preregistration_path=prereg_path
    )
    _run_analysis("agent-vs-human", parameters, **kw)
