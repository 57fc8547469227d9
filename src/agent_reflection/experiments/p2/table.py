"""Every P2 signal, shown: the full table of the report and the CSV beside it.

A reviewer must see which commit landed in which bucket and why without opening
results.json: one row per signal with its repository, commits, category, bucket, the rule
that put it there, the evidence that rule read (CI results, the fix's diff, its message or
paths, review events, the risk floor's paths), its gate label and who gave it, and the full
subject and reason. The HTML table is collapsible (``<details>``, counted signals open, the
others closed) and holds every row; the CSV holds the same rows, each cell safe to open in a
spreadsheet (:func:`~agent_reflection.experiments.p2.sheet.safe_cell`).

Pure: :func:`signal_rows`, :func:`signals_html`, :func:`signals_csv`.
"""

from __future__ import annotations

import csv
import html
import io
from collections.abc import Mapping, Sequence
from typing import Any

from agent_reflection.experiments.p2.sheet import safe_cell

#: the columns of the table and of the CSV, in order
COLUMNS = (
    "repo",
    "fixing_sha",
    "introducing_sha",
    "kind",
    "category",
    "bucket",
    "rule",
    "evidence",
    "gate_label",
    "gate_rater",
    "label_is_failure",
    "gap_days",
    "subject",
    "why",
)


def signal_rows(details: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per signal of a P2 result's ``details`` (counted first, then the others),
    with :data:`COLUMNS`; ``rule`` is the bucket's rule for a counted signal, the category's
    rule for the others."""
    rows = []
    for s in details.get("signals") or []:
        row = {c: s.get(c) for c in COLUMNS}
        if s.get("bucket") is None:
            row["rule"] = s.get("category_rule")
        rows.append(row)
    return sorted(rows, key=lambda r: r["bucket"] is None)


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


#: commit columns shown as their first 12 characters in the HTML (the full id is the cell's
#: tooltip and in the CSV), so the subject and reason fit beside them
SHORT_COLUMNS = ("fixing_sha", "introducing_sha")


def _html_cell(column: str, value: Any) -> str:
    text = _cell(value)
    if column in SHORT_COLUMNS and len(text) > 12:
        return f"<code title='{html.escape(text)}'>{html.escape(text[:12])}</code>"
    return html.escape(text)


def _table(rows: Sequence[Mapping[str, Any]]) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in COLUMNS)
    body = "".join(
        "<tr>" + "".join(f"<td>{_html_cell(c, r[c])}</td>" for c in COLUMNS) + "</tr>" for r in rows
    )
    # a page narrower than the table scrolls it rather than cutting its last columns off
    return (
        "<div style='overflow-x:auto'>"
        f'<table class="signals"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
        "</div>"
    )


def signals_html(rows: Sequence[Mapping[str, Any]]) -> str:
    """The report's table: every counted signal (open) and every other signal (closed), each
    in a collapsible section that says how many rows it holds; nothing is cut."""
    counted = [r for r in rows if r["bucket"] is not None]
    others = [r for r in rows if r["bucket"] is None]
    return (
        "<style>table.signals td{vertical-align:top;white-space:normal;text-align:left}"
        " table.signals td:nth-last-child(-n+2){min-width:24em}</style>"
        f"<details open><summary>{len(counted)} counted signal(s): bucket, the rule that put "
        f"it there and the evidence it read, gate label and rater</summary>{_table(counted)}"
        "</details>"
        f"<details><summary>{len(others)} signal(s) listed but not counted: category and "
        f"rule</summary>{_table(others)}</details>"
    )


def signals_csv(rows: Sequence[Mapping[str, Any]]) -> str:
    """The same rows as CSV, every text cell made safe for spreadsheets."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    for r in rows:
        writer.writerow({c: safe_cell(_cell(r[c])) for c in COLUMNS})
    return out.getvalue()
