"""The run report: ``index.html`` and ``summary.md`` with the verdicts and the Phase-0 gate."""

from __future__ import annotations

import html
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agent_reflection.experiments.gate import Gate

NAMES = {"p1": "P1 calibration", "p2": "P2 git history", "p3": "P3 detectability"}


def _metric(doc: Mapping[str, Any]) -> str:
    m = doc["metric"]
    if m["value"] is None:
        return f"{m['name']} undefined"
    ci = "" if m.get("ci_low") is None else f" [{m['ci_low']:.3f}, {m['ci_high']:.3f}]"
    return f"{m['name']} = {m['value']:.3f}{ci}"


def summary_markdown(run_id: str, docs: Mapping[str, Mapping[str, Any]], gate: Gate) -> str:
    lines = [f"# Phase-0 report {run_id}", ""]
    if gate.exploratory:
        lines += ["> **EXPLORATORY — parameters differ from the pre-registration; not a "
                  "pre-registered result.**", ""]  # fmt: skip
    lines += [f"**{gate.headline}**", ""]
    lines += [f"- {r}" for r in (*gate.reasons, *gate.caveats)]
    lines += ["", "| experiment | verdict | metric | n | exploratory | report |",
              "|---|---|---|---|---|---|"]  # fmt: skip
    for key, doc in docs.items():
        lines.append(
            f"| {NAMES[key]} | **{doc['verdict']}** | {_metric(doc)} | {doc['n']} | "
            f"{'yes' if doc['exploratory'] else 'no'} | [{key}/report.html]({key}/report.html) |"
        )
    shas = sorted({doc["preregistration"]["sha256"] for doc in docs.values()})
    lines += ["", f"Pre-registration SHA-256: {', '.join(shas)}", ""]
    for key, doc in docs.items():
        lines += [f"## {NAMES[key]}: {doc['verdict']}", "", f"Rule: {doc['kill_condition']}", ""]
        lines += [f"- {n}" for n in doc["notes"]] + [""]
    return "\n".join(lines)


def index_html(
    run_id: str,
    docs: Mapping[str, Mapping[str, Any]],
    gate: Gate,
    figures: Mapping[str, list[str]],
) -> str:
    e = html.escape
    banner = (
        '<div class="x">EXPLORATORY — parameters differ from the pre-registration; '
        "not a pre-registered result.</div>"
        if gate.exploratory
        else ""
    )
    rows = "".join(
        f"<tr><td>{e(NAMES[k])}</td><td class='{e(d['verdict'])}'>{e(d['verdict'])}</td>"
        f"<td>{e(_metric(d))}</td><td>{d['n']}</td>"
        f"<td>{'EXPLORATORY' if d['exploratory'] else 'pre-registered'}</td>"
        f"<td><a href='{k}/report.html'>notebook</a> · <a href='{k}/results.json'>results.json"
        "</a></td></tr>"
        for k, d in docs.items()
    )
    sections = ""
    for k, d in docs.items():
        notes = "".join(f"<li>{e(n)}</li>" for n in d["notes"])
        imgs = "".join(f"<img src='{e(f)}' alt='{e(f)}'>" for f in figures.get(k, []))
        sections += (
            f"<h2>{e(NAMES[k])}: {e(d['verdict'])}"
            f"{' (EXPLORATORY)' if d['exploratory'] else ''}</h2>"
            f"<p>Rule: {e(d['kill_condition'])}</p><ul>{notes}</ul>{imgs}"
        )
    reasons = "".join(f"<li>{e(r)}</li>" for r in (*gate.reasons, *gate.caveats))
    shas = ", ".join(sorted({d["preregistration"]["sha256"] for d in docs.values()}))
    return f"""<!doctype html><html><head><meta charset="utf-8">
<title>Phase-0 report {e(run_id)}</title><style>
body{{font-family:sans-serif;max-width:1000px;margin:2em auto}} td,th{{padding:4px 10px}}
table{{border-collapse:collapse}} tr:nth-child(even){{background:#f4f4f4}}
.kill{{color:#b00;font-weight:bold}} .continue{{color:#070;font-weight:bold}}
.x{{background:#fdd;border:2px solid #b00;padding:8px;font-weight:bold}}
.gate{{font-size:1.3em;padding:8px;border:2px solid #444}} img{{max-width:48%;margin:4px}}
</style></head><body>{banner}<h1>Phase-0 report {e(run_id)}</h1>
<div class="gate">{e(gate.headline)}</div><ul>{reasons}</ul>
<table><tr><th>experiment</th><th>verdict</th><th>metric</th><th>n</th><th>status</th>
<th>details</th></tr>{rows}</table><p>Pre-registration SHA-256: {e(shas)}</p>
{sections}{banner}</body></html>
"""


def write_report(
    run_dir: Path,
    run_id: str,
    docs: Mapping[str, Mapping[str, Any]],
    gate: Gate,
    figures: Mapping[str, list[str]],
) -> tuple[Path, Path]:
    index = run_dir / "index.html"
    summary = run_dir / "summary.md"
    summary.write_text(summary_markdown(run_id, docs, gate), "utf-8")
    index.write_text(index_html(run_id, docs, gate, figures), "utf-8")
    return index, summary
