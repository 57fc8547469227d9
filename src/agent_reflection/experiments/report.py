"""The run report: ``index.html`` and ``summary.md`` with the verdicts and the Phase-0 gate."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agent_reflection.experiments.gate import Gate
from agent_reflection.experiments.summary import experiment_summary, gate_summary

NAMES = {"p1": "P1 calibration", "p2": "P2 git history", "p3": "P3 detectability"}


def _metric(doc: Mapping[str, Any]) -> str:
    m = doc["metric"]
    if m["value"] is None:
        return f"{m['name']} undefined"
    ci = "" if m.get("ci_low") is None else f" [{m['ci_low']:.3f}, {m['ci_high']:.3f}]"
    return f"{m['name']} = {m['value']:.3f}{ci}"


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


def registration_lines(docs: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """ "registered <date>, data loaded <date>", the data's time range, and every amendment."""
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
        lines += [f"Amended {a['at']}: {a['reason']}" for a in reg.get("amendments", [])]
        lines.append(
            f"File {reg['path']} (chosen by {reg['route']}) "
            + ("matches the lock." if reg["matches_lock"] else "does NOT match the lock.")
        )
    return lines


def history_summary(history: Sequence[str]) -> str:
    """The folded registration history's one line: how many amendments, the newest one's date."""
    amended = [line for line in history if line.startswith("Amended ")]
    if not amended:
        return "History: frozen once, never amended (the reason)"
    newest = amended[-1].removeprefix("Amended ").split(": ", 1)[0]
    return (
        f"History: frozen, then {len(amended)} amendment(s), the newest {newest} "
        "(open for each one's date and reason)"
    )


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


def summary_markdown(run_id: str, docs: Mapping[str, Mapping[str, Any]], gate: Gate) -> str:
    lines = [f"# Phase-0 report {run_id}", ""]
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
        lines.append(
            f"| {NAMES[key]} | **{doc['verdict']}** | {_metric(doc)} | {doc['n']} | "
            f"{'yes' if doc['exploratory'] else 'no'} | [{key}/report.html]({key}/report.html) |"
        )
    shas = sorted({doc["preregistration"]["sha256"] for doc in docs.values()})
    lines += ["", f"Pre-registration SHA-256: {', '.join(shas)}", ""]
    lines += [f"- {line}" for line in registration_lines(docs)] + [""]
    for key, doc in docs.items():
        lines += [f"## {NAMES[key]}: {doc['verdict']}", ""]
        lines += [f"- {k}: {v}" for k, v in experiment_summary(doc).facts]
        lines += ["", f"Rule: {doc['kill_condition']}", ""]
        lines += [f"- {n}" for n in (*doc["notes"], *data_lines(doc))] + [""]
    return "\n".join(lines)


def index_html(
    run_id: str,
    docs: Mapping[str, Mapping[str, Any]],
    gate: Gate,
    figures: Mapping[str, list[str]],
) -> str:
    e = html.escape
    why = "".join(f"<li>{e(r)}</li>" for r in exploratory_reasons(docs))
    banner = (
        f'<div class="x">EXPLORATORY — not a pre-registered result:<ul>{why}</ul></div>'
        if gate.exploratory
        else ""
    )
    lines = registration_lines(docs)
    # the registration's history (frozen, then each amendment with its reason) is long: folded
    history = [line for line in lines if line.startswith(("Frozen ", "Amended "))]
    registration = "".join(f"<li>{e(line)}</li>" for line in lines if line not in history)
    if history:
        registration += (
            f"<li><details><summary>{e(history_summary(history))}</summary><ul>"
            + "".join(f"<li>{e(line)}</li>" for line in history)
            + "</ul></details></li>"
        )
    rows = "".join(
        f"<tr><td>{e(NAMES[k])}</td><td class='{e(d['verdict'])}'>{e(d['verdict'])}</td>"
        f"<td>{e(_metric(d))}</td><td>{d['n']}</td>"
        f"<td>{'EXPLORATORY' if d['exploratory'] else 'pre-registered'}</td>"
        f"<td><a href='{k}/report.html'>notebook</a> · <a href='{k}/results.json'>results.json"
        "</a></td></tr>"
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
        facts = "".join(f"<li><b>{e(f)}:</b> {e(v)}</li>" for f, v in experiment_summary(d).facts)
        notes = "".join(f"<li>{e(n)}</li>" for n in (*d["notes"], *data_lines(d)))
        imgs = "".join(f"<img src='{e(f)}' alt='{e(f)}'>" for f in figures.get(k, []))
        sections += (
            f"<h2>{e(NAMES[k])}: {e(d['verdict'])}"
            f"{' (EXPLORATORY)' if d['exploratory'] else ''}</h2>"
            f"<ul class='facts'>{facts}</ul>"
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
.summary{{background:#f6f6fa;border:1px solid #99a;padding:4px 12px;margin-bottom:1em}}
.summary p{{margin:4px 0}}
</style></head><body>{banner}<h1>Phase-0 report {e(run_id)}</h1>{summary}
<div class="gate">{e(gate.headline)}</div><ul>{reasons}</ul>
<table><tr><th>experiment</th><th>verdict</th><th>metric</th><th>n</th><th>status</th>
<th>details</th></tr>{rows}</table><p>Pre-registration SHA-256: {e(shas)}</p>
<ul>{registration}</ul>
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
