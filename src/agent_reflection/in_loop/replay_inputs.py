"""Where the anti-loop replay reads its inputs, whatever folder ``reflect`` runs in, and what it
says when one is missing.

The replay (:mod:`~agent_reflection.in_loop.loop_replay`) reads **files**, not the database:
an agent-run export (``steps.jsonl.gz`` + ``runs.jsonl``) and a folder of Claude Code
transcripts. The detector keys a failure on its command and error text, and the tables keep
less of both: ``run_steps`` has a step's outcome but not its return code (an agent-run step's
error text) and clips and redacts the command; ``tool_calls`` keeps the first 2,000 characters
of each result, redacted. Its defaults are the real exports beside the
checkout, found as the tests find them: ``$AGENT_REFLECTION_SHARED``, else the folder
``shared`` beside the checkout (``<checkout>/../shared``), never the current folder. The
reader's labels of the shared runs (``escalation_labels``: ``labels.csv`` and its
tuning / held-out ``split.csv`` beside it) ship with the checkout's tests.

:func:`resolve` turns the notebook's parameters ("" = the default) into absolute paths and a
line for each input that is missing, naming it and how to set it; :func:`review_status` says
what became of the labels (not there, nothing to compare with, or matched k of N runs).
"""

from __future__ import annotations

import os
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

from agent_reflection import config

#: The checkout this module runs from (``src/agent_reflection/in_loop`` is three levels in).
CHECKOUT = Path(__file__).resolve().parents[3]
#: Under the shared folder: the agent-run export and the Claude Code transcripts.
AGENT_RUNS = Path("data") / "agent-runs"
TRANSCRIPTS = Path("data") / "claude-code"
#: The reader's labels of the replayed runs, in the checkout (the split is beside them).
REVIEW_LABELS = CHECKOUT / "tests" / "data" / "escalation_labels" / "labels.csv"
#: The tuning / held-out split's file name, beside the labels.
SPLIT_FILE = "split.csv"


def shared_dir() -> Path:
    """``$AGENT_REFLECTION_SHARED``, else ``shared/`` beside the checkout (absolute)."""
    env = config.env_text(config.SHARED)
    return Path(env).expanduser().resolve() if env else CHECKOUT.parent / "shared"


@dataclass(frozen=True)
class ReplayInputs:
    """The replay's inputs as absolute paths, and a line per input that is not there."""

    agent_runs_dir: Path
    transcripts_dir: Path
    review_labels: Path
    #: One line per input that is not there: which, where it was looked for, how to set it.
    missing: tuple[str, ...]

    @property
    def has_agent_runs(self) -> bool:
        return (self.agent_runs_dir / "steps.jsonl.gz").is_file()

    @property
    def transcript_files(self) -> tuple[Path, ...]:
        return tuple(sorted(self.transcripts_dir.glob("*.jsonl")))


def _given(value: str | os.PathLike[str] | None, default: Path) -> tuple[Path, bool]:
    """(the path, whether it is the default). A relative path given is taken from the current
    folder, as a shell user means it."""
    if value is None or str(value) == "":
        return default, True
    return Path(value).expanduser().resolve(), False


def resolve(
    agent_runs_dir: str | os.PathLike[str] | None = None,
    transcripts_dir: str | os.PathLike[str] | None = None,
    review_labels: str | os.PathLike[str] | None = None,
) -> ReplayInputs:
    """The inputs of the replay ("" or None: the default) and what is missing among them."""
    runs, runs_default = _given(agent_runs_dir, shared_dir() / AGENT_RUNS)
    transcripts, transcripts_default = _given(transcripts_dir, shared_dir() / TRANSCRIPTS)
    labels, _ = _given(review_labels, REVIEW_LABELS)
    env = config.env_text(config.SHARED)
    via_shared = f" or set {config.SHARED.env} to the folder whose data/ holds it" + (
        f" (it is {env})" if env else ""
    )
    missing: list[str] = []
    if not (runs / "steps.jsonl.gz").is_file():
        where = "folder not found" if not runs.is_dir() else "no steps.jsonl.gz in it"
        missing.append(
            f"agent runs: {runs} ({where}); pass --agent-runs DIR (notebook parameter "
            f"agent_runs_dir){via_shared if runs_default else ''}"
        )
    if not transcripts.is_dir() or not any(transcripts.glob("*.jsonl")):
        where = "folder not found" if not transcripts.is_dir() else "no *.jsonl in it"
        missing.append(
            f"Claude Code transcripts: {transcripts} ({where}); pass --transcripts DIR "
            f"(notebook parameter transcripts_dir){via_shared if transcripts_default else ''}"
        )
    if not labels.is_file() or not (labels.parent / SPLIT_FILE).is_file():
        what = "file not found" if not labels.is_file() else f"no {SPLIT_FILE} beside it"
        missing.append(
            f"review labels: {labels} ({what}; notebook parameter escalation_labels; "
            "the reading of the shared runs ships in the checkout's tests/data)"
        )
    return ReplayInputs(runs, transcripts, labels, tuple(missing))


def review_status(
    labels_path: Path, label_runs: Sequence[str] | None, replayed_runs: Collection[str]
) -> str | None:
    """What became of the review labels, or None when they were compared with the replay.

    ``label_runs``: the run ids the labels file holds (None: the file is not there);
    ``replayed_runs``: the agent runs replayed.
    """
    if label_runs is None:
        return f"no review labels at {labels_path}"
    if not replayed_runs:
        return (
            f"labels file {labels_path} found ({len(label_runs):,} labels) but no agent runs "
            "were replayed to compare them with"
        )
    matched = sum(1 for run in label_runs if run in replayed_runs)
    if matched == 0:
        return (
            f"labels file {labels_path} found but matched 0 of {len(replayed_runs):,} runs "
            f"(its {len(label_runs):,} labels are for other runs)"
        )
    return None
