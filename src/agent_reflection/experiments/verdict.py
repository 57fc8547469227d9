"""The verdict: an experiment's three-way decision from its interval, and the Phase-0 gate.

**Decisions** (:func:`decide`): ``continue``, ``kill`` or ``inconclusive``. A point estimate
never kills. The data must *rule out* a useful effect before an experiment is killed, and must
*rule out chance* (and reach the smallest useful effect) before it continues:

- ``continue``: the interval's lower bound is above the null value and the estimate reaches
  the pre-registered smallest useful effect (``continue_when="estimate"``), or, for P1's
  registered rule (``continue_when="interval"``), the interval still allows the smallest useful
  effect (it is not a kill). Why the second: an estimate must reach the smallest useful effect
  in only half the samples drawn when that effect is the truth, so "continue" would have 50%
  power there at any sample size; the interval's lower bound clears the null with the
  registered power once the interval is as narrow as the registered precision target;
- ``kill``: the interval's upper bound is below the smallest useful effect (no useful
  effect is compatible with the data);
- ``inconclusive``: anything else. Not a kill: more data would decide it.

``insufficient-data`` (too few rows for any interval) is decided by each experiment before it
calls :func:`decide`.

**The Phase-0 gate** (:func:`phase0_gate`): may the closed calibration / skill-synthesis loop
be built? Allowed only if neither P1 nor P2 is killed — and, to be a decision at all, both must
have reached a verdict (``continue``); an inconclusive, insufficient-data or missing P1/P2
leaves the gate *undecided*. A P3 kill adds the caveat "outcome signals are rare: caveat notes
only". Any exploratory input makes the gate exploratory: it can never be shown as
pre-registered.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agent_reflection.stats.interval import Interval

CONTINUE = "continue"
KILL = "kill"
INCONCLUSIVE = "inconclusive"
INSUFFICIENT = "insufficient-data"
#: Every verdict an experiment may return, in the order reports list them.
VERDICTS = (CONTINUE, KILL, INCONCLUSIVE, INSUFFICIENT)
#: What "continue" needs besides a lower bound above the null (:func:`decide`).
CONTINUE_RULES = ("estimate", "interval")
#: A qualification of a verdict: a stratum whose confidence ranks wrong above right.
ANTI_INFORMATIVE = "anti-informative"


def qualified_verdict(verdict: str, qualifications: Sequence[Mapping[str, Any]]) -> str:
    """The verdict as a reader sees it: ``"continue, except model X, which is
    anti-informative"`` when the registered rule named strata (results.json ``qualifications``),
    else the verdict alone."""
    named = [q for q in qualifications if q.get("kind") == ANTI_INFORMATIVE]
    if not named:
        return verdict
    names = ", ".join(
        f"{q['column']} {q['stratum']}" if q.get("column") else str(q["stratum"]) for q in named
    )
    which = "which is" if len(named) == 1 else "which are"
    return f"{verdict}, except {names}, {which} {ANTI_INFORMATIVE}"


@dataclass(frozen=True)
class Decision:
    """A verdict and the sentence that explains it in the interval's own numbers."""

    verdict: str
    reason: str


def decide(
    interval: Interval,
    *,
    null_value: float,
    smallest_useful: float,
    what: str = "estimate",
    continue_when: str = "estimate",
) -> Decision:
    """The three-way decision on ``interval`` for an effect where larger is better.

    ``null_value`` is what "no signal" looks like (0.5 for an AUC, 0 for a share);
    ``smallest_useful`` is the pre-registered smallest effect worth building on.
    ``continue_when`` is ``"estimate"`` (the estimate reaches ``smallest_useful``) or
    ``"interval"`` (the interval's upper bound reaches it: chance is ruled out and a useful
    effect is not).
    """
    if continue_when not in CONTINUE_RULES:
        raise ValueError(f"continue_when must be one of {CONTINUE_RULES}, got {continue_when!r}")
    estimate, ci_low, ci_high = interval.value, interval.ci_low, interval.ci_high
    if not ci_low <= estimate <= ci_high:
        raise ValueError(f"{what} {estimate} lies outside its interval [{ci_low}, {ci_high}]")
    if smallest_useful < null_value:
        raise ValueError(
            f"smallest useful {what} {smallest_useful} is below the null value {null_value}"
        )
    shown = f"{what} {estimate:.3f} (CI {ci_low:.3f}–{ci_high:.3f})"
    if ci_high < smallest_useful:
        return Decision(
            KILL,
            f"{shown}: the interval's upper bound is below the smallest useful "
            f"{what} {smallest_useful:g}, so the data rule out a useful signal",
        )
    if ci_low > null_value and continue_when == "interval":
        below = (
            ""
            if estimate >= smallest_useful
            else " (the estimate itself is below it: chance is ruled out, a useful size not yet)"
        )
        return Decision(
            CONTINUE,
            f"{shown}: the lower bound is above {null_value:g} and the upper bound still "
            f"allows the smallest useful {what} {smallest_useful:g}{below}",
        )
    if ci_low > null_value and estimate >= smallest_useful:
        return Decision(
            CONTINUE,
            f"{shown}: the lower bound is above {null_value:g} and the estimate reaches "
            f"the smallest useful {what} {smallest_useful:g}",
        )
    if ci_low > null_value:
        why = (
            f"above {null_value:g}, but the estimate is below the smallest useful "
            f"{what} {smallest_useful:g}"
        )
    else:
        why = (
            f"the lower bound is not above {null_value:g}, yet the upper bound still allows "
            f"the smallest useful {what} {smallest_useful:g}"
        )
    return Decision(INCONCLUSIVE, f"{shown}: {why}; more data would decide it")


CAVEAT_P3 = (
    "P3 killed: machine-detectable outcomes are rare, so the loop may only produce caveat "
    "notes, not calibrated scores"
)


#: The command that runs every experiment the gate reads.
RUN_ALL = "reflect run all"

_PENDING: Mapping[str | None, str] = {
    None: "not run",
    INCONCLUSIVE: "is inconclusive (its interval neither rules a useful signal in nor out)",
    INSUFFICIENT: "has insufficient data",
}


@dataclass(frozen=True)
class Gate:
    decision: str  # allowed | blocked | undecided
    allowed: bool
    reasons: tuple[str, ...]
    caveats: tuple[str, ...]
    exploratory: bool
    verdicts: Mapping[str, str | None]
    #: what simulated the data (``reflect demo``), None for real data
    simulated: str | None = None

    @property
    def headline(self) -> str:
        text = {
            "allowed": "closed loop ALLOWED",
            "blocked": "closed loop BLOCKED",
            "undecided": "UNDECIDED",
        }[self.decision]
        if self.decision == "undecided" and None in self.verdicts.values():
            # `reflect run p1` alone: not a gate that failed to decide, one that was not asked
            text = f"not decided (needs p1, p2 and p3 in one run: {RUN_ALL})"
        # a verdict about a simulator's world must not read as one about a team's agents
        text = ("Phase-0 gate (SIMULATED data): " if self.simulated else "Phase-0 gate: ") + text
        return text + (" (EXPLORATORY — not a pre-registered result)" if self.exploratory else "")

    def to_dict(self) -> dict[str, Any]:
        return {
            "decision": self.decision,
            "allowed": self.allowed,
            "headline": self.headline,
            "reasons": list(self.reasons),
            "caveats": list(self.caveats),
            "exploratory": self.exploratory,
            "simulated": self.simulated,
            "verdicts": dict(self.verdicts),
        }


def phase0_gate(results: Mapping[str, Mapping[str, Any]]) -> Gate:
    """``results`` maps ``p1``/``p2``/``p3`` to results.v1 documents (any may be missing)."""
    verdicts = {k: (results[k]["verdict"] if k in results else None) for k in ("p1", "p2", "p3")}
    exploratory = any(bool(doc.get("exploratory")) for doc in results.values())
    reasons: list[str] = []
    caveats: list[str] = []
    killed = [k for k in ("p1", "p2") if verdicts[k] == KILL]
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
    if verdicts["p3"] == KILL:
        caveats.append(CAVEAT_P3)
    elif verdicts["p3"] in _PENDING:
        caveats.append(f"P3 {_PENDING[verdicts['p3']]}")
    return Gate(
        decision,
        decision == "allowed",
        tuple(reasons),
        tuple(caveats),
        exploratory,
        verdicts,
        simulated_by(results),
    )


def simulated_by(results: Mapping[str, Mapping[str, Any]]) -> str | None:
    """What simulated the data of any of these results.v1 documents (their ``data.simulated``,
    which the runner records), or None when all of them read real data."""
    origins = dict.fromkeys(
        str(origin)
        for doc in results.values()
        if (origin := (doc.get("data") or {}).get("simulated"))
    )
    return "; ".join(origins) or None
