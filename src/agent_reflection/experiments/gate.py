"""The Phase-0 gate: may the closed calibration / skill-synthesis loop be built?

Allowed only if neither P1 nor P2 is killed — and, to be a decision at all, both must have
reached a verdict (``continue``); an inconclusive, insufficient-data or missing P1/P2 leaves
the gate *undecided*. A P3 kill adds the caveat "outcome signals are rare: caveat notes only". Any
exploratory input makes the gate exploratory: it can never be shown as pre-registered.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

CAVEAT_P3 = (
    "P3 killed: machine-detectable outcomes are rare, so the loop may only produce caveat "
    "notes, not calibrated scores"
)


#: The command that runs every experiment the gate reads.
RUN_ALL = "reflect run all"

_PENDING: Mapping[str | None, str] = {
    None: "not run",
    "inconclusive": "is inconclusive (its interval neither rules a useful signal in nor out)",
    "insufficient-data": "has insufficient data",
}


@dataclass(frozen=True)
class Gate:
    decision: str  # allowed | blocked | undecided
    allowed: bool
    reasons: tuple[str, ...]
    caveats: tuple[str, ...]
    exploratory: bool
    verdicts: Mapping[str, str | None]

    @property
    def headline(self) -> str:
        text = {
            "allowed": "Phase-0 gate: closed loop ALLOWED",
            "blocked": "Phase-0 gate: closed loop BLOCKED",
            "undecided": "Phase-0 gate: UNDECIDED",
        }[self.decision]
        if self.decision == "undecided" and None in self.verdicts.values():
            # `reflect run p1` alone: not a gate that failed to decide, one that was not asked
            text = f"Phase-0 gate: not decided (needs p1, p2 and p3 in one run: {RUN_ALL})"
        return text + (" (EXPLORATORY — not a pre-registered result)" if self.exploratory else "")

    def to_dict(self) -> dict[str, Any]:
        return {
            "decision": self.decision,
            "allowed": self.allowed,
            "headline": self.headline,
            "reasons": list(self.reasons),
            "caveats": list(self.caveats),
            "exploratory": self.exploratory,
            "verdicts": dict(self.verdicts),
        }


def phase0_gate(results: Mapping[str, Mapping[str, Any]]) -> Gate:
    """``results`` maps ``p1``/``p2``/``p3`` to results.v1 documents (any may be missing)."""
    verdicts = {k: (results[k]["verdict"] if k in results else None) for k in ("p1", "p2", "p3")}
    exploratory = any(bool(doc.get("exploratory")) for doc in results.values())
    reasons: list[str] = []
    caveats: list[str] = []
    killed = [k for k in ("p1", "p2") if verdicts[k] == "kill"]
    pending = [k for k in ("p1", "p2") if verdicts[k] in _PENDING]
    if killed:
        decision = "blocked"
        reasons += [f"{k.upper()} killed" for k in killed]
    elif pending:
        decision = "undecided"
        reasons += [f"{k.upper()} {_PENDING[verdicts[k]]}" for k in pending]
    else:
        decision = "allowed"
        reasons.append("neither P1 nor P2 killed")
    if verdicts["p3"] == "kill":
        caveats.append(CAVEAT_P3)
    elif verdicts["p3"] in _PENDING:
        caveats.append(f"P3 {_PENDING[verdicts['p3']]}")
    return Gate(
        decision, decision == "allowed", tuple(reasons), tuple(caveats), exploratory, verdicts
    )
