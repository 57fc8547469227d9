"""The one interval type: a point estimate and its two-sided confidence interval.

Every statistic here with an interval returns an :class:`Interval`, or a result that is one
and adds its own facts (:class:`~.wilson.WilsonResult` adds the counts,
:class:`~.delong.DeLongResult` the variance): the experiments decide on it
(:func:`~agent_reflection.experiments.verdict.decide`) and write it to results.json as
``value`` / ``ci_low`` / ``ci_high`` (:meth:`Interval.to_dict`), whatever computed it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Interval:
    """``value`` and its interval ``[ci_low, ci_high]``.

    A percentile interval may miss its own estimate on degenerate data, so the value is not
    required to lie inside; the bounds must be in order.
    """

    value: float
    ci_low: float
    ci_high: float

    def __post_init__(self) -> None:
        if self.ci_low > self.ci_high:
            raise ValueError(f"interval bounds out of order: [{self.ci_low}, {self.ci_high}]")

    def to_dict(self, digits: int | None = None) -> dict[str, float]:
        """``{"value", "ci_low", "ci_high"}`` (rounded to ``digits`` when given), as
        results.json writes an interval."""
        values = {"value": self.value, "ci_low": self.ci_low, "ci_high": self.ci_high}
        if digits is None:
            return values
        return {k: round(v, digits) for k, v in values.items()}
