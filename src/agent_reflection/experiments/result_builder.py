"""One way to build an experiment's :class:`ExperimentResult`.

P1, P2 and P3 each compute a verdict, a metric and their tables; everything else in a result
(the parameters used, whether the run is exploratory, the pre-registration's provenance) comes
from the pre-registration's entry for the experiment, and is filled in here the same way for all.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal

from agent_reflection.experiments.preregistration import Preregistration, params_dict
from agent_reflection.experiments.results import ExperimentResult, Metric

ExperimentName = Literal["p1", "p2", "p3"]


def experiment_result(
    prereg: Preregistration,
    experiment: ExperimentName,
    *,
    title: str,
    verdict: str,
    metric: Metric,
    n: int,
    thresholds: Mapping[str, Any],
    kill_condition: str,
    notes: Iterable[str],
    details: Mapping[str, Any],
) -> ExperimentResult:
    """The result of ``experiment`` from its computed numbers and ``prereg``'s entry for it:
    ``parameters`` are that entry's values, ``exploratory`` and ``preregistration`` the run's."""
    return ExperimentResult(
        experiment=experiment,
        title=title,
        verdict=verdict,
        metric=metric,
        n=n,
        thresholds=thresholds,
        kill_condition=kill_condition,
        notes=tuple(notes),
        exploratory=prereg.exploratory,
        preregistration=prereg.provenance(),
        parameters=params_dict(getattr(prereg, experiment)),
        details=details,
    )
