"""What a run reports: the summary every report opens with, and the run's ``index.html`` and
``summary.md``.

One place builds the sentences: the question, the verdict, the number with its interval, n,
and what would change the verdict (for an experiment's ``results.json``), or what an analysis
found (for the in-loop and cycle reports, which have no verdict). The notebooks show
:meth:`Summary.markdown`; ``reflect run`` prints :meth:`Summary.lines`. :func:`write_report`
writes the run's index and ``summary.md`` with the verdicts and the Phase-0 gate.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Collection, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from agent_reflection.experiments.verdict import (
    CONTINUE,
    INCONCLUSIVE,
    INSUFFICIENT,
    KILL,
    Gate,
    qualified_verdict,
)

#: The question each experiment answers, in the words a reader would ask it.
QUESTIONS = {
    "p1": "Does the agent's self-rated confidence separate right answers from wrong ones?",
    "p2": "Which failures in git history did CI and human review miss, leaving only "
    "self-reflection to catch them?",
    "p3": "Can a machine tell, within the follow-up window, whether finished work was right?",
}

#: The threshold that says how much data an experiment needs before it can decide.
MINIMUMS = ("max_ci_half_width", "min_per_class", "min_signals", "min_tasks")

#: The file an analysis notebook writes its summary to (read back by ``reflect run``).
SUMMARY_FILE = "report_summary.json"

#: What every verdict about simulated data carries (``reflect demo``), and the sentence that
#: says what that means to a reader the report is forwarded to.
SIMULATED_TAG = "SIMULATED data"
SIMULATED_WARNING = (
    "SIMULATED DATA: these verdicts are about a simulator's world with a known answer "
    "(reflect demo), not about any team's agents."
)


def is_simulated(doc: Mapping[str, Any]) -> bool:
    """Whether a results.v1 document's data were simulated (``data.simulated``, which the
    runner records from the database's ``simulated`` loads)."""
    return bool((doc.get("data") or {}).get("simulated"))


@dataclass(frozen=True)
class Summary:
    """A report's opening block. ``facts`` are (label, text) pairs shown in order; ``lead``,
    when set, is the block's first line, before the question (P2: on whose gate labels an
    exploratory verdict rests, :func:`experiment_summary`)."""

    title: str
    question: str
    facts: tuple[tuple[str, str], ...]
    exploratory: bool = False
    #: the data were simulated (``reflect demo``): the block says so wherever it is shown
    simulated: bool = False
    lead: str = ""

    def lines(self) -> tuple[str, ...]:
        """The block as terminal lines: the title, then one indented line per fact."""
        tag = " (EXPLORATORY)" if self.exploratory else ""
        tag += f" ({SIMULATED_TAG})" if self.simulated else ""
        return (f"{self.title}{tag}", *self.body_lines())

    def body_lines(self, *, without: tuple[str, ...] = ()) -> tuple[str, ...]:
        """The indented lines under a heading the caller prints itself (``without``: facts
        that heading already says, e.g. the verdict): the lead first, then the question."""
        facts = (f"  {k}: {v}" for k, v in self.facts if k not in without)
        lead = (f"  {self.lead}",) if self.lead else ()
        return (*lead, f"  question: {self.question}", *facts)

    def markdown(self) -> str:
        """The block as Markdown: a heading, the lead, the question, a bullet per fact."""
        tag = f" ({SIMULATED_TAG})" if self.simulated else ""
        lines = [f"## Summary: {self.title}{tag}", ""]
        if self.lead:
            lines += [f"**{self.lead}**", ""]
        lines += [f"**Question.** {self.question}", ""]
        if self.simulated:
            lines += [f"**{SIMULATED_WARNING}**", ""]
        if self.exploratory:
            lines += ["**EXPLORATORY — not a pre-registered result.**", ""]
        lines += [f"- **{k}:** {v}" for k, v in self.facts]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """The block as data, the lead first (``reflect run --json``)."""
        return {"lead": self.lead, **{k: v for k, v in asdict(self).items() if k != "lead"}}

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any], where: str = "summary") -> Summary:
        """The inverse of :meth:`to_dict`; a malformed document names ``where`` and the field."""
        for key, kind in (("title", str), ("question", str), ("facts", list)):
            if not isinstance(doc.get(key), kind):
                raise ValueError(f"{where}: field {key!r} must be a {kind.__name__}")
        if not isinstance(doc.get("lead", ""), str):
            raise ValueError(f"{where}: field 'lead' must be a str")
        facts = []
        for i, fact in enumerate(doc["facts"]):
            if not (isinstance(fact, list | tuple) and len(fact) == 2):
                raise ValueError(f"{where}: facts[{i}] must be a [label, text] pair")
            facts.append((str(fact[0]), str(fact[1])))
        return cls(
            doc["title"],
            doc["question"],
            tuple(facts),
            bool(doc.get("exploratory")),
            bool(doc.get("simulated")),
            str(doc.get("lead", "")),
        )


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
    more = (details.get("power") or {}).get("more_rows_to_decide") or {}
    if verdict == INSUFFICIENT and more.get("more_rows") is not None:  # P1: precision target
        return (
            f"more data: about {more['more_rows']:,} further rows ({more['more_correct']:,} "
            f"correct, {more['more_incorrect']:,} incorrect) at the observed mix of classes, "
            f"strata and clusters would narrow the interval (now {metric['ci_low']:.3f}–"
            f"{metric['ci_high']:.3f}) to the registered precision target "
            f"(half-width {thresholds.get('max_ci_half_width', 0):g}), or a decision before that"
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
    by_interval = (doc.get("parameters") or {}).get("continue_rule") == "interval"
    if verdict == CONTINUE:
        estimate = (
            ""
            if by_interval
            else f" or the estimate (now {metric['value']:.3f}) below {smallest:g}"
        )
        return (
            f"inconclusive if the lower bound (now {low:.3f}) were at or below {null_value:g}"
            f"{estimate}; a kill only if the upper bound (now {high:.3f}) fell below {smallest:g}"
        )
    if verdict == INCONCLUSIVE:
        rows = (
            f"; if the truth is the estimate, about {more['more_rows']:,} further rows at the "
            "observed mix would decide it"
            if more.get("more_rows") is not None
            else ""
        )
        condition = "" if by_interval else f" with the estimate at least {smallest:g}"
        return (
            f"a narrower interval: upper bound below {smallest:g} (now {high:.3f}) kills; "
            f"lower bound above {null_value:g} (now {low:.3f}){condition} continues{rows}"
        )
    return f"verdict {verdict!r} has no rule to change it"


def _verdict(doc: Mapping[str, Any]) -> str:
    """A results document's verdict with what the registered rules add to it."""
    return qualified_verdict(doc["verdict"], doc.get("qualifications") or ())


def experiment_summary(doc: Mapping[str, Any]) -> Summary:
    """The opening block of an experiment's report, from its results.v1 document."""
    key = doc["experiment"]
    title = doc.get("title") or key
    details = doc.get("details") or {}
    # P2: on whose gate labels the verdict rests comes before the verdict itself; when that
    # makes it exploratory (borrowed or too few labels), it is the summary's first line
    rests_on = details.get("verdict_rests_on")
    standing = details.get("label_standing") or {}
    lead = str(rests_on) if rests_on and standing.get("confirmatory") is False else ""
    facts = [
        *([("labels", str(rests_on))] if rests_on and not lead else []),
        ("verdict", _verdict(doc)),
        ("number", number_text(doc["metric"])),
        ("n", f"{doc['n']:,}"),
        ("would change the verdict", would_change(doc)),
    ]
    reason = details.get("reason")
    if reason:
        facts.append(("why", str(reason)))
    return Summary(
        title=title,
        question=QUESTIONS.get(key, title),
        facts=tuple(facts),
        exploratory=bool(doc.get("exploratory")),
        simulated=is_simulated(doc),
        lead=lead,
    )


def gate_summary(docs: Mapping[str, Mapping[str, Any]], headline: str) -> Summary:
    """The run index's opening block: the gate's headline, then one line per experiment."""
    facts = [("decision", headline)]
    for key, doc in docs.items():
        facts.append(
            (
                key.upper(),
                f"{_verdict(doc)}; {number_text(doc['metric'])}; n = {doc['n']:,}",
            )
        )
    return Summary(
        title="Phase-0 gate",
        question="May the closed calibration loop be built on the agents' self-reflection?",
        facts=tuple(facts),
        exploratory=any(d.get("exploratory") for d in docs.values()),
        simulated=any(is_simulated(d) for d in docs.values()),
    )


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


NAMES = {"p1": "P1 calibration", "p2": "P2 git history", "p3": "P3 detectability"}


def exploratory_reasons(docs: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Why the run is exploratory: each reason once, with the experiments it applies to."""
    by_reason: dict[str, list[str]] = {}
    for key, doc in docs.items():
        prereg = doc.get("preregistration", {})
        reasons = prereg.get("exploratory_reasons")
        if reasons is None and doc.get("exploratory"):  # written before reasons were recorded
            reasons = ["parameters differ from the pre-registration"]
        for reason in reasons or []:
            by_reason.setdefault(reason, []).append(key)
    return [f"{r} ({', '.join(keys)})" for r, keys in by_reason.items()]


#: An experiment named in an amendment's reason: ``[p1]``, ``P1:``, ``p1.x``, ``P1/P2/P3``.
_EXPERIMENT_NAMED = re.compile(r"\b(p[1-3])\b", re.IGNORECASE)


def experiments_named(reason: str) -> frozenset[str]:
    """The experiments (``p1``, ``p2``, ``p3``) an amendment's reason names."""
    return frozenset(m.lower() for m in _EXPERIMENT_NAMED.findall(reason))


def touches(reason: str, experiments: Collection[str]) -> bool:
    """Whether an amendment (by its reason) may concern any of ``experiments``: it names one
    of them, or it names none (then nothing tells which it touched, so it is shown)."""
    named = experiments_named(reason)
    return not named or bool(named & set(experiments))


#: Starts the line that counts the amendments a report leaves out.
NOT_SHOWN = "Not shown:"


def registration_lines(docs: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """ "registered <date>, data loaded <date>", the data's time range, and the amendments
    that touch the run's experiments (:func:`touches`; one line counts the others)."""
    registrations = [d["registration"] for d in docs.values() if d.get("registration")]
    loaded = [
        d["data"]["loaded_at"] for d in docs.values() if (d.get("data") or {}).get("loaded_at")
    ]
    lows = [d["data"]["time_min"] for d in docs.values() if (d.get("data") or {}).get("time_min")]
    highs = [d["data"]["time_max"] for d in docs.values() if (d.get("data") or {}).get("time_max")]
    reg = registrations[0] if registrations else None
    registered = "not registered (no lock)"
    if reg and reg.get("frozen_at"):
        registered = f"registered {reg['frozen_at']}"
        if reg.get("amendments"):
            registered += f", amended {reg['amendments'][-1]['at']}"
    data = f"data loaded {max(loaded)}" if loaded else "data loaded: no load recorded"
    lines = [f"Pre-registration {registered}, {data}."]
    if lows and highs:
        lines.append(f"Data time range: {min(lows)} to {max(highs)}.")
    if reg:
        if reg.get("frozen_reason"):
            lines.append(f"Frozen {reg['frozen_at']}: {reg['frozen_reason']}")
        amendments = reg.get("amendments", [])
        shown = [a for a in amendments if touches(a["reason"], docs.keys())]
        lines += [f"Amended {a['at']}: {a['reason']}" for a in shown]
        if len(shown) < len(amendments):
            names = ", ".join(k.upper() for k in docs)
            lines.append(
                f"{NOT_SHOWN} {len(amendments) - len(shown)} amendment(s) naming only "
                f"experiments other than {names} (`reflect prereg status` lists every one)."
            )
        lines.append(
            f"File {reg['path']} (chosen by {reg['route']}) "
            + ("matches the lock." if reg["matches_lock"] else "does NOT match the lock.")
        )
    return lines


def data_lines(doc: Mapping[str, Any]) -> list[str]:
    """One line per table the experiment read: rows, content hash, loads, time range."""
    data = doc.get("data")
    if not data:
        return []
    lines = []
    for t in data["tables"]:
        loads = "; ".join(
            f"load {ld['load_id']} ({ld['source']}) {ld['origin']}, finished {ld['finished_at']}"
            for ld in t["loads"]
        )
        span = f", {t['time_min']} to {t['time_max']}" if t["time_min"] else ""
        lines.append(
            f"data: {t['table']} {t['rows']:,} rows (hash {t['content_hash']}{span})"
            + (f" from {loads}" if loads else "")
        )
    return lines


def simulated_title(gate: Gate) -> str:
    """`` (SIMULATED data)`` after a run's title when its data were simulated, else ``""``."""
    return f" ({SIMULATED_TAG})" if gate.simulated else ""


def split_history(lines: list[str]) -> tuple[list[str], list[str], str]:
    """:func:`registration_lines` as (the lines shown, the history folded under one line, that
    line): the history (frozen, each amendment with its reason) is long, a reader opens it."""
    history = [line for line in lines if line.startswith(("Frozen ", "Amended ", NOT_SHOWN))]
    shown = [line for line in lines if line not in history]
    amended = [line for line in history if line.startswith("Amended ")]
    folded = "History: frozen once, never amended (the reason)"
    if amended:
        newest = amended[-1].removeprefix("Amended ").split(": ", 1)[0]
        folded = (
            f"History: frozen, then {len(amended)} amendment(s) that may touch this run's "
            f"experiments, the newest {newest} (open for each one's date and reason)"
        )
    return shown, history, folded


def summary_markdown(
    run_id: str,
    docs: Mapping[str, Mapping[str, Any]],
    gate: Gate,
    notebooks: Mapping[str, str] | None = None,
) -> str:
    """The run's ``summary.md``, for the reader: the gate's summary and the verdicts first,
    then each experiment, then the pre-registration and the data (details folded)."""
    notebooks = notebooks or {}
    lines = [f"# Phase-0 report {run_id}{simulated_title(gate)}", ""]
    if gate.simulated:
        # the summary block below carries the warning; this says what made the data
        lines += [f"> Simulated by {gate.simulated}.", ""]
    if gate.exploratory:
        lines += ["> **EXPLORATORY — not a pre-registered result:**", ">"]
        lines += [f"> - {r}" for r in exploratory_reasons(docs)] + [""]
    lines += [gate_summary(docs, gate.headline).markdown(), ""]
    lines += [f"- {r}" for r in (*gate.reasons, *gate.caveats)]
    lines += [
        "",
        "| experiment | verdict | metric | n | exploratory | report |",
        "|---|---|---|---|---|---|",
    ]
    for key, doc in docs.items():
        code = f" · [notebook (code)]({notebooks[key]})" if key in notebooks else ""
        lines.append(
            f"| {NAMES[key]} | **{_verdict(doc)}** | {number_text(doc['metric'])} | {doc['n']} | "
            f"{'yes' if doc['exploratory'] else 'no'} | [{key}/report.html]({key}/report.html)"
            f"{code} |"
        )
    lines.append("")
    for key, doc in docs.items():
        tag = f" ({SIMULATED_TAG})" if is_simulated(doc) else ""
        lines += [f"## {NAMES[key]}: {_verdict(doc)}{tag}", ""]
        opening = experiment_summary(doc)
        lines += [f"**{opening.lead}**", ""] if opening.lead else []
        lines += [f"- {k}: {v}" for k, v in opening.facts]
        lines += ["", f"Rule: {doc['kill_condition']}", ""]
        lines += [f"- {n}" for n in doc["notes"]] + [""]
        data = data_lines(doc)
        if data:
            lines += [f"<details><summary>Data read ({len(data)} table(s))</summary>", ""]
            lines += [f"- {n}" for n in data] + ["", "</details>", ""]
    shas = sorted({doc["preregistration"]["sha256"] for doc in docs.values()})
    shown, history, folded = split_history(registration_lines(docs))
    lines += ["## Pre-registration", "", f"SHA-256: {', '.join(shas)}", ""]
    lines += [f"- {line}" for line in shown] + [""]
    if history:
        lines += [f"<details><summary>{html.escape(folded)}</summary>", ""]
        lines += [f"- {line}" for line in history] + ["", "</details>", ""]
    return "\n".join(lines)


def index_html(
    run_id: str,
    docs: Mapping[str, Mapping[str, Any]],
    gate: Gate,
    figures: Mapping[str, list[str]],
    notebooks: Mapping[str, str] | None = None,
) -> str:
    """The run's ``index.html``, in the order of :func:`summary_markdown`; ``notebooks`` maps
    an experiment to its executed notebook (relative to the run folder), linked beside its
    report page for those who want the code."""
    e = html.escape
    notebooks = notebooks or {}
    why = "".join(f"<li>{e(r)}</li>" for r in exploratory_reasons(docs))
    banner = (
        f'<div class="x">EXPLORATORY — not a pre-registered result:<ul>{why}</ul></div>'
        if gate.exploratory
        else ""
    )
    if gate.simulated:
        banner = (
            f'<div class="x sim">{e(SIMULATED_WARNING)}<br>'
            f"<small>Simulated by {e(gate.simulated)}.</small></div>{banner}"
        )
    title = f"Phase-0 report {run_id}{simulated_title(gate)}"
    shown, history, folded = split_history(registration_lines(docs))
    registration = "".join(f"<li>{e(line)}</li>" for line in shown)
    if history:
        registration += (
            f"<li><details><summary>{e(folded)}</summary><ul>"
            + "".join(f"<li>{e(line)}</li>" for line in history)
            + "</ul></details></li>"
        )
    rows = "".join(
        f"<tr><td>{e(NAMES[k])}</td><td class='{e(d['verdict'])}'>{e(_verdict(d))}</td>"
        f"<td>{e(number_text(d['metric']))}</td><td>{d['n']}</td>"
        f"<td>{'EXPLORATORY' if d['exploratory'] else 'pre-registered'}"
        f"{', SIMULATED data' if is_simulated(d) else ''}</td>"
        f"<td><a href='{k}/report.html'>report</a>"
        + (f" · <a href='{e(notebooks[k])}'>notebook (code)</a>" if k in notebooks else "")
        + f" · <a href='{k}/results.json'>results.json</a></td></tr>"
        for k, d in docs.items()
    )
    opening = gate_summary(docs, gate.headline)
    summary = (
        f"<div class='summary'><h2>Summary</h2><p><b>Question.</b> {e(opening.question)}</p>"
        + "".join(f"<p><b>{e(k)}:</b> {e(v)}</p>" for k, v in opening.facts)
        + "</div>"
    )
    sections = ""
    for k, d in docs.items():
        opening = experiment_summary(d)
        lead = f"<p class='lead'>{e(opening.lead)}</p>" if opening.lead else ""
        facts = "".join(f"<li><b>{e(f)}:</b> {e(v)}</li>" for f, v in opening.facts)
        notes = "".join(f"<li>{e(n)}</li>" for n in d["notes"])
        data = data_lines(d)
        if data:
            notes += (
                f"<li><details><summary>Data read ({len(data)} table(s))</summary><ul>"
                + "".join(f"<li>{e(n)}</li>" for n in data)
                + "</ul></details></li>"
            )
        imgs = "".join(f"<img src='{e(f)}' alt='{e(f)}'>" for f in figures.get(k, []))
        sections += (
            f"<h2>{e(NAMES[k])}: {e(_verdict(d))}"
            f"{' (EXPLORATORY)' if d['exploratory'] else ''}"
            f"{f' ({SIMULATED_TAG})' if is_simulated(d) else ''}</h2>{lead}"
            f"<ul class='facts'>{facts}</ul>"
            f"<p>Rule: {e(d['kill_condition'])}</p><ul>{notes}</ul>{imgs}"
        )
    reasons = "".join(f"<li>{e(r)}</li>" for r in (*gate.reasons, *gate.caveats))
    shas = ", ".join(sorted({d["preregistration"]["sha256"] for d in docs.values()}))
    return f"""<!doctype html><html><head><meta charset="utf-8">
<title>{e(title)}</title><style>
body{{font-family:sans-serif;max-width:1000px;margin:2em auto}} td,th{{padding:4px 10px}}
table{{border-collapse:collapse}} tr:nth-child(even){{background:#f4f4f4}}
.kill{{color:#b00;font-weight:bold}} .continue{{color:#070;font-weight:bold}}
.x{{background:#fdd;border:2px solid #b00;padding:8px;font-weight:bold}}
.gate{{font-size:1.3em;padding:8px;border:2px solid #444}} img{{max-width:48%;margin:4px}}
.summary{{background:#f6f6fa;border:1px solid #99a;padding:4px 12px;margin-bottom:1em}}
.summary p{{margin:4px 0}} .lead{{font-weight:bold;color:#b00}}
.sim{{background:#fe9;border-color:#a60}}
</style></head><body>{banner}<h1>{e(title)}</h1>{summary}
<div class="gate">{e(gate.headline)}</div><ul>{reasons}</ul>
<table><tr><th>experiment</th><th>verdict</th><th>metric</th><th>n</th><th>status</th>
<th>details</th></tr>{rows}</table>
{sections}<h2>Pre-registration</h2><p>SHA-256: {e(shas)}</p>
<ul>{registration}</ul>{banner}</body></html>
"""


def write_report(
    run_dir: Path,
    run_id: str,
    docs: Mapping[str, Mapping[str, Any]],
    gate: Gate,
    figures: Mapping[str, list[str]],
    notebooks: Mapping[str, Path] | None = None,
) -> tuple[Path, Path]:
    """Write ``index.html`` and ``summary.md`` into ``run_dir``; ``notebooks`` (the executed
    notebooks) are linked beside each experiment's report page."""
    index = run_dir / "index.html"
    summary = run_dir / "summary.md"
    linked = {
        k: p.relative_to(run_dir).as_posix()
        for k, p in (notebooks or {}).items()
        if k in docs and p.is_relative_to(run_dir)
    }
    summary.write_text(summary_markdown(run_id, docs, gate, linked), "utf-8")
    index.write_text(index_html(run_id, docs, gate, figures, linked), "utf-8")
    return index, summary
