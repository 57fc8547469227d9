"""The experiments' one result builder (experiments/result_builder.experiment_result)."""

from __future__ import annotations

from agent_reflection.experiments.registration import (
    apply_overrides,
    load_preregistration,
    params_dict,
)
from agent_reflection.experiments.results import Metric, experiment_result


def test_result_builder_takes_parameters_and_provenance_from_the_preregistration() -> None:
    prereg = apply_overrides(load_preregistration(), {"p2.window_days": 30})
    result = experiment_result(
        prereg,
        "p2",
        title="t",
        verdict="insufficient-data",
        metric=Metric("share", None),
        n=0,
        thresholds={"min_signals": prereg.p2.min_signals},
        kill_condition="k",
        notes=iter(["a", "b"]),
        details={"x": 1},
    )
    assert result.parameters["window_days"] == 30  # the entry as overridden, not the file's
    assert result.parameters == params_dict(prereg.p2)
    assert result.exploratory is True  # an override that changes a value
    assert result.preregistration == prereg.provenance()
    assert (result.experiment, result.notes, result.n) == ("p2", ("a", "b"), 0)
