"""The short summary every report opens with, and the terminal prints.

One place builds the sentences: the question, the verdict, the number with its interval, n,
and what would change the verdict (for an experiment's ``results.json``), or what an analysis
found (for the in-loop and cycle reports, which have no verdict). The notebooks show
:meth:`Summary.markdown`; ``reflect run`` prints :meth:`Summary.lines`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_reflection.experiments.decision import CONTINUE, INCONCLUSIVE, INSUFFICIENT, KILL

#: The question each experiment answers, in the words a reader would ask it.
QUESTIONS = {
    "p1": "Does the agent's self-rated confidence separate right answers from wrong ones?",
    "p2": "Which failures in git history did CI and human review miss, leaving only "
    "self-reflection to catch them?",
    "p3": "Can a machine tell, within the follow-up window, whether finished work was right?",
}

#: The threshold that says how much data an experiment needs before it can decide.
MINIMUMS = ("min_per_class", "min_signals", "min_tasks")

#: The file an analysis notebook writes its summary to (read back by ``reflect run``).
SUMMARY_FILE = "report_summary.json"


@dataclass(frozen=True)
class Summary:
    """A report's opening block. ``facts`` are (label, text) pairs shown in order."""

    title: str
    question: str
    facts: tuple[tuple[str, str], ...]
    exploratory: bool = False

    def lines(self) -> tuple[str, ...]:
        """The block as terminal lines: the title, then one indented line per fact."""
        tag = " (EXPLORATORY)" if self.exploratory else ""
        return (f"{self.title}{tag}", *self.body_lines())

    def body_lines(self, *, without: tuple[str, ...] = ()) -> tuple[str, ...]:
        """The indented lines under a heading the caller prints itself (``without``: facts
        that heading already says, e.g. the verdict)."""
        facts = (f"  {k}: {v}" for k, v in self.facts if k not in without)
        return (f"  question: {self.question}", *facts)

    def markdown(self) -> str:
        """The block as Markdown: a heading, the question, a bullet per fact."""
        lines = [f"## Summary: {self.title}", "", f"**Question.** {self.question}", ""]
        if self.exploratory:
            lines += ["**EXPLORATORY — not a pre-registered result.**", ""]
        lines += [f"- **{k}:** {v}" for k, v in self.facts]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "question": self.question,
            "facts": [list(f) for f in self.facts],
            "exploratory": self.exploratory,
        }

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any], where: str = "summary") -> Summary:
        """The inverse of :meth:`to_dict`; a malformed document names ``where`` and the field."""
        for key, kind in (("title", str), ("question", str), ("facts", list)):
            if not isinstance(doc.get(key), kind):
                raise ValueError(f"{where}: field {key!r} must be a {kind.__name__}")
        facts = []
        for i, fact in enumerate(doc["facts"]):
            if not (isinstance(fact, list | tuple) and len(fact) == 2):
                raise ValueError(f"{where}: facts[{i}] must be a [label, text] pair")
            facts.append((str(fact[0]), str(fact[1])))
        return cls(doc["title"], doc["question"], tuple(facts), bool(doc.get("exploratory")))


def number_text(metric: Mapping[str, Any]) -> str:
    """``"AUC = 0.612 (95% bootstrap CI 0.551–0.670)"``, or ``"AUC undefined"``."""
    if metric.get("value") is None:
        return f"{metric['name']} undefined (no estimate on these data)"
    text = f"{metric['name']} = {metric['value']:.3f}"
    if metric.get("ci_low") is not None and metric.get("ci_high") is not None:
        level = metric.get("confidence_level")
        how = " ".join(
            part
            for part in (f"{level:.0%}" if level else "", metric.get("ci_method") or "", "CI")
            if part
        )
        text += f" ({how} {metric['ci_low']:.3f}–{metric['ci_high']:.3f})"
    return text


def _threshold(thresholds: Mapping[str, Any], prefix: str) -> tuple[str, float] | None:
    for key, value in thresholds.items():
        if key.startswith(prefix) and isinstance(value, int | float):
            return key, float(value)
    return None


def would_change(doc: Mapping[str, Any]) -> str:
    """What result would move the verdict, in the experiment's own pre-registered numbers."""
    verdict = doc["verdict"]
    metric = doc["metric"]
    thresholds = doc.get("thresholds") or {}
    name = metric["name"]
    useful = _threshold(thresholds, "smallest_useful")
    null = _threshold(thresholds, "null_")
    null_value = null[1] if null else 0.0
    details = doc.get("details") or {}
    if verdict == INSUFFICIENT and details.get("lower_bound"):  # P3: sources lack channels
        lacking = sorted(
            {c for src in details.get("sources") or [] for c in src.get("missing_channels") or []}
        )
        if lacking:
            hint = (
                " (commits: the git history of the linked commits)" if "commits" in lacking else ""
            )
            return (
                f"data on the missing required channel(s) {', '.join(lacking)}{hint}; the "
                "fraction shown is only a lower bound"
            )
    if verdict == INSUFFICIENT or metric.get("value") is None or useful is None:
        minimum = next((k for k in MINIMUMS if isinstance(thresholds.get(k), int | float)), None)
        need = f" (pre-registered minimum: {minimum} = {thresholds[minimum]:g})" if minimum else ""
        low, high = metric.get("ci_low"), metric.get("ci_high")
        if verdict == INSUFFICIENT and low is not None and high is not None:
            # an interval was computed, but below the minimum sample it is not decided on
            return (
                f"more data: below the minimum sample the interval (now {low:.3f}–{high:.3f}) "
                f"decides nothing{need}"
            )
        return f"more data: too few rows for an interval{need}"
    smallest = useful[1]
    low, high = metric.get("ci_low"), metric.get("ci_high")
    if low is None or high is None:
        return f"an interval for {name}; the point estimate alone decides nothing"
    if verdict == KILL:
        return (
            f"not a kill if the upper bound (now {high:.3f}) reached the smallest useful "
            f"{name} {smallest:g}"
        )
    if verdict == CONTINUE:
        return (
            f"inconclusive if the lower bound (now {low:.3f}) were at or below {null_value:g} "
            f"or the estimate (now {metric['value']:.3f}) below {smallest:g}; a kill only if "
            f"the upper bound (now {high:.3f}) fell below {smallest:g}"
        )
    if verdict == INCONCLUSIVE:
        return (
            f"a narrower interval: upper bound below {smallest:g} (now {high:.3f}) kills; "
            f"lower bound above {null_value:g} (now {low:.3f}) with the estimate at least "
            f"{smallest:g} continues"
        )
    return f"verdict {verdict!r} has no rule to change it"


def experiment_summary(doc: Mapping[str, Any]) -> Summary:
    """The opening block of an experiment's report, from its results.v1 document."""
    key = doc["experiment"]
    title = doc.get("title") or key
    facts = [
        ("verdict", doc["verdict"]),
        ("number", number_text(doc["metric"])),
        ("n", f"{doc['n']:,}"),
        ("would change the verdict", would_change(doc)),
    ]
    reason = (doc.get("details") or {}).get("reason")
    if reason:
        facts.append(("why", str(reason)))
    return Summary(
        title=title,
        question=QUESTIONS.get(key, title),
        facts=tuple(facts),
        exploratory=bool(doc.get("exploratory")),
    )


def gate_summary(docs: Mapping[str, Mapping[str, Any]], headline: str) -> Summary:
    """The run index's opening block: the gate's headline, then one line per experiment."""
    facts = [("decision", headline)]
    for key, doc in docs.items():
        facts.append(
            (key.upper(), f"{doc['verdict']}; {number_text(doc['metric'])}; n = {doc['n']:,}")
        )
    return Summary(
        title="Phase-0 gate",
        question="May the closed calibration loop be built on the agents' self-reflection?",
        facts=tuple(facts),
        exploratory=any(d.get("exploratory") for d in docs.values()),
    )


def findings_summary(title: str, question: str, facts: Sequence[tuple[str, str]]) -> Summary:
    """The opening block of an analysis without a verdict (in-loop, cycle): what it found."""
    return Summary(title=title, question=question, facts=tuple(facts))


def write_summary(summary: Summary, output_dir: str | Path) -> Path:
    """Write ``summary`` as ``output_dir/report_summary.json`` for ``reflect run`` to print."""
    path = Path(output_dir) / SUMMARY_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(summary.to_dict(), indent=2) + "\n", "utf-8")
    return path


def read_summary(output_dir: str | Path) -> Summary | None:
    """The summary an analysis notebook wrote, or None when it wrote none."""
    path = Path(output_dir) / SUMMARY_FILE
    if not path.is_file():
        return None
    doc = json.loads(path.read_text("utf-8"))
    if not isinstance(doc, dict):
        raise ValueError(f"{path}: must be a JSON object")
    return Summary.from_dict(doc, str(path))
