"""The typed result every experiment returns, and its ``results.json`` form (results.v1).

P1, P2 and P3 each compute a verdict, a metric and their tables; everything else in a result
(the parameters used, whether the run is exploratory, the pre-registration's provenance) comes
from the pre-registration's entry for the experiment, and :func:`experiment_result` fills it in
the same way for all.

Two optional blocks record what a result stands on: ``registration`` (the pre-registration
file compared with ``preregistration.lock``: SHA-256, frozen_at, amendments, why it is
exploratory) and ``data`` (per table read: load ids, origins, rows, content hash, time range).
Readers of results.v1 written before them keep working: both are optional.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from agent_reflection import __version__
from agent_reflection.experiments.registration import Preregistration, params_dict
from agent_reflection.experiments.verdict import VERDICTS, qualified_verdict
from agent_reflection.stats.interval import Interval

SCHEMA_ID = "results.v1"


@dataclass(frozen=True)
class Metric:
    """The statistic an experiment's verdict reads: its name, its estimate with the interval
    (None: undefined on these data), how the interval was computed and at what level."""

    name: str
    interval: Interval | None = None
    ci_method: str | None = None
    confidence_level: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """results.v1's ``metric`` block: ``value``, ``ci_low`` and ``ci_high`` are null when
        the statistic is undefined."""
        bounds = self.interval.to_dict() if self.interval is not None else {}
        return {
            "name": self.name,
            "value": bounds.get("value"),
            "ci_low": bounds.get("ci_low"),
            "ci_high": bounds.get("ci_high"),
            "ci_method": self.ci_method,
            "confidence_level": self.confidence_level,
        }


@dataclass(frozen=True)
class ExperimentResult:
    """One experiment's outcome. ``details`` holds experiment-specific tables (JSON-able)."""

    experiment: str
    title: str
    verdict: str
    metric: Metric
    n: int
    thresholds: Mapping[str, Any]
    kill_condition: str
    notes: tuple[str, ...]
    exploratory: bool
    preregistration: Mapping[str, Any]
    parameters: Mapping[str, Any]
    details: Mapping[str, Any] = field(default_factory=dict)
    #: data provenance (experiments.provenance.DataProvenance.to_dict()); the runner adds it
    data: Mapping[str, Any] | None = None
    #: what the registered rules add to the verdict (P1: anti-informative strata)
    qualifications: tuple[Mapping[str, Any], ...] = ()

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, got {self.verdict!r}")

    @property
    def label(self) -> str:
        """The verdict as shown to people (qualified, with EXPLORATORY when it applies)."""
        text = qualified_verdict(self.verdict, self.qualifications)
        return f"{text} (EXPLORATORY)" if self.exploratory else text

    def to_dict(self) -> dict[str, Any]:
        preregistration = dict(self.preregistration)
        registration = preregistration.pop("registration", None)
        doc: dict[str, Any] = _clean(
            {
                "schema": SCHEMA_ID,
                "experiment": self.experiment,
                "title": self.title,
                "verdict": self.verdict,
                "exploratory": self.exploratory,
                "metric": self.metric.to_dict(),
                "n": self.n,
                "thresholds": dict(self.thresholds),
                "kill_condition": self.kill_condition,
                "notes": list(self.notes),
                "preregistration": preregistration,
                "parameters": dict(self.parameters),
                "details": dict(self.details),
                "tool_version": __version__,
                "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
            }
        )
        if registration is not None:
            doc["registration"] = _clean(registration)
        if self.data is not None:
            doc["data"] = _clean(dict(self.data))
        if self.qualifications:
            doc["qualifications"] = _clean([dict(q) for q in self.qualifications])
            doc["verdict_qualified"] = qualified_verdict(self.verdict, self.qualifications)
        return doc

    def write_json(self, path: str | Path, *, validate: bool = True) -> Path:
        """Write (atomically) to ``path``, validated against results.v1 unless told not to
        (the notebooks skip it: the runner validates every results.json it collects)."""
        return write_results_doc(self.to_dict(), path, validate=validate)


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
    qualifications: Iterable[Mapping[str, Any]] = (),
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
        qualifications=tuple(qualifications),
    )


def _clean(value: Any) -> Any:
    """NaN/inf become null; tuples lists; keys strings."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    if hasattr(value, "item") and callable(value.item):  # numpy scalars
        return _clean(value.item())
    return value


@cache
def results_schema() -> dict[str, Any]:
    text = resources.files("agent_reflection").joinpath("data/results.v1.schema.json")
    loaded: dict[str, Any] = dict(json.loads(text.read_text("utf-8")))
    return loaded


def validate_results(doc: Mapping[str, Any]) -> None:
    """Raise ``jsonschema.ValidationError`` when ``doc`` is not a results.v1 document."""
    from jsonschema.exceptions import best_match

    error = best_match(_results_validator().iter_errors(doc))  # as jsonschema.validate does
    if error is not None:
        raise error


@cache
def _results_validator() -> Any:
    """One validator per process. ``jsonschema.validate`` checks the schema against its
    meta-schema and builds a validator on every call (30-90 ms a call); the packaged schema
    is checked once, by the tests."""
    import jsonschema

    schema = results_schema()
    return jsonschema.validators.validator_for(schema)(schema)


def write_results_doc(doc: Mapping[str, Any], path: str | Path, *, validate: bool = True) -> Path:
    """Validate (unless told not to) and write (atomically) a results.v1 document, e.g. one
    the runner amended."""
    if validate:
        validate_results(doc)
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_suffix(p.suffix + ".tmp")
    tmp.write_text(json.dumps(doc, indent=2, sort_keys=False) + "\n", "utf-8")
    tmp.replace(p)
    return p


def read_results(path: str | Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(Path(path).read_text("utf-8"))
    validate_results(doc)
    return doc
