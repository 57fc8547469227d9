"""The pre-registration: every analysis choice of P1/P2/P3, fixed before seeing the data.

:func:`load_preregistration` reads and validates the TOML (errors name the file, the key and
what is expected) and records its SHA-256. :func:`load_for_run` returns the parameters a run
actually uses: the *effective* file (:func:`resolve_preregistration`) compared with the lock of
the registered file (:mod:`~agent_reflection.experiments.registration`), plus the overrides.
Any difference from the registered file, a missing lock or an override that changes a value
marks the run **exploratory**, with the reasons.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from importlib import resources
from pathlib import Path
from typing import Any

from agent_reflection.config import build, check_keys, coerce_field
from agent_reflection.errors import ReflectionError
from agent_reflection.experiments.registration import Registration, compare, lock_path_for
from agent_reflection.load.git.signals import FIX_WORDINGS

#: Environment variable naming the pre-registration file to use.
PREREG_ENV = "REFLECT_PREREGISTRATION"
FILE_NAME = "preregistration.toml"
#: How the effective file was chosen, in order of precedence (see resolve_preregistration).
ROUTE_FLAG = "--prereg"
ROUTE_ENV = f"${PREREG_ENV}"
ROUTE_WORKING_FOLDER = f"./{FILE_NAME}"
ROUTE_REGISTERED = "registered"
BUCKETS = ("ci", "human-review", "only-self-reflection")
#: P1's primary interval: the cluster bootstrap, or the cluster-robust stratified DeLong one.
P1_CI_METHODS = ("cluster_bootstrap", "stratified_delong")
#: How the cluster bootstrap draws its resamples (stats/cluster_bootstrap.py): the type counts
#: as one multinomial, or (registrations before that amendment) C cluster indices a resample.
#: The same bootstrap distribution either way; the random streams differ.
P1_BOOTSTRAP_DRAWS = ("multinomial-by-cluster-type", "cluster-index")
#: Keys a section no longer has, and why: a file that still sets one is refused (naming the
#: key), because its registration expected a behaviour the analysis no longer has.
RETIRED_KEYS: dict[str, dict[str, str]] = {
    "p1": {
        "bootstrap_max_rows": (
            "the cluster bootstrap now runs at every size (it counts each resample's AUC "
            "from per-cluster counts, linear in rows), so there is no row limit above which "
            "the stratified DeLong interval replaces it; delete the key"
        ),
    },
}


class InvalidPreregistration(ReflectionError, ValueError):
    """The pre-registration file is missing, unreadable or has a wrong key or value."""


@dataclass(frozen=True)
class P1Params:
    metric: str
    label_source: str
    high_confidence_threshold: float
    confidence_level: float
    ci_method: str
    bootstrap_method: str
    bootstrap_resamples: int
    seed: int
    smallest_useful_auc: float
    power: float
    strata_columns: tuple[str, ...]
    cluster_columns: tuple[str, ...]
    ece_bins: tuple[float, ...]
    lift_fraction: float
    group_columns: tuple[str, ...]
    min_group_rows: int
    # loop labels (label_source = "loop"): sessions, their commits and outcomes (load/sessions.py)
    loop_window_days: int = 30
    loop_link_hours_before: int = 8
    loop_link_hours_after: int = 24
    loop_link_min_jaccard: float = 0.5
    loop_ignore_cosmetic_fixes: bool = True
    # a file without the key predates the multinomial draws: it registered cluster indices
    bootstrap_draws: str = "cluster-index"
    # the largest bootstrap_resamples x (cluster types + (stratum, score) keys) the bootstrap is
    # the primary interval for; above it the clustered stratified DeLong interval is primary.
    # 0: no budget (what a file without the key registered: the bootstrap at every size)
    bootstrap_budget: int = 0


@dataclass(frozen=True)
class Rule:
    name: str
    bucket: str
    fixing_message: str | None = None
    fixing_paths_all: tuple[str, ...] = ()
    failing_risk_needs_review: bool | None = None


@dataclass(frozen=True)
class P2Params:
    metric: str
    window_days: int
    time_column: str
    feature_cc_types: tuple[str, ...]
    feature_merged_pr: bool
    feature_direct_commits: bool
    non_feature_cc_types: tuple[str, ...]
    exclude_fix_like_introducers: bool
    exclude_bulk_introducers: bool
    exclude_merge_introducers: bool
    non_code_paths: tuple[str, ...]
    test_paths: tuple[str, ...]
    cosmetic_lint_message: str
    cosmetic_typo_message: str
    risk_threshold: float
    smallest_useful_share: float
    confidence_level: float
    min_signals: int
    labels_paths: tuple[str, ...]
    min_labelled_for_precision: int
    rules: tuple[Rule, ...]
    # a fix or revert whose every code line only sets a version string is a release, not a fix
    exclude_version_bumps: bool = False
    # regex on the subject of a fix/revert that changes only tests: it adds a test ("" = off)
    new_test_message: str = ""
    # typo words also decide when every code line the loaded diff changes is text-only
    # (fix_changes.text_lines: inside string literals or markup text)
    cosmetic_typo_text_only: bool = False
    # label files (a subset of labels_paths) judged after the rules were frozen: reported apart
    holdout_labels_paths: tuple[str, ...] = ()
    # CI results as data (ci_runs): conclusions that mean CI failed; () = ignore ci_runs
    ci_failed_conclusions: tuple[str, ...] = ("failure", "timed_out", "startup_failure", "error")
    # `reflect p2 sheet`: signals drawn per P2 bucket for gate labelling, and the draw's seed
    gate_sample_per_bucket: int = 20
    gate_sample_seed: int = 20261123
    # an independent second rater of the counted signals (is_failure + gate_label), and the
    # third readings of the raters' disagreements: agreement, consensus and bucket precision
    second_rater_labels_paths: tuple[str, ...] = ()
    adjudication_paths: tuple[str, ...] = ()
    # the verdict statistic: the only-self-reflection share gate-corrected (double sampling,
    # experiments/p2_gates.py), precision-corrected, or raw
    # (default: the statistic of the files written before the key existed)
    share_statistic: str = "precision-corrected"
    # the team's own gate labels of its signals (the second rater's columns); () = none
    gate_labels_paths: tuple[str, ...] = ()
    # P2's bucket of each signal the shipped gate labels judge: the transported matrix
    gate_label_buckets_paths: tuple[str, ...] = ()
    # fewer labelled signals in a bucket (with unlabelled ones) -> the pooled row; fewer
    # labelled judged signals in all -> the transported matrix
    gate_min_labelled: int = 10
    gate_bootstrap_resamples: int = 4000
    gate_bootstrap_seed: int = 0
    # how a subject's fix words make a commit fix-like for P2 (load/git/signals.py FIX_WORDINGS):
    # "word" anywhere (the stored commits.is_fix_like; the files before the key), "verb" only
    # where they act as a verb
    fix_wording: str = "word"
    # also run P2 under the other fix_wording and report its verdict beside the registered one
    # (details.fix_wording.other_reading and a note); reporting only, never the verdict
    fix_wording_sensitivity: bool = False


@dataclass(frozen=True)
class LinkRule:
    """P3: links whose kind matches ``kind`` (regex, case-insensitive) in ``direction``
    (inward | outward, as the task's own record lists them) count against the task."""

    kind: str
    direction: str


@dataclass(frozen=True)
class P3Params:
    metric: str
    window_days: int
    min_follow_up_days: int
    as_of: str
    confidence_level: float
    smallest_useful_fraction: float
    min_tasks: int
    completion_event_kinds: tuple[str, ...]
    required_channels: tuple[str, ...]
    reopen_event_kinds: tuple[str, ...]
    reopen_status_pattern: str
    verified_pattern: str
    verified_event_kinds: tuple[str, ...]
    commit_signals: bool
    regression_links: tuple[LinkRule, ...]
    # cross-reference signals: event kinds, and a regex their detail must match; () = off
    cross_reference_kinds: tuple[str, ...] = ()
    cross_reference_pattern: str = "^issue "


@dataclass(frozen=True)
class AgentVsHumanParams:
    """Exploratory: agent-authored vs human commits (experiments/agent_vs_human.py)."""

    span: str
    time_column: str
    follow_up_days: int
    confidence_level: float
    min_group_commits: int
    exclude_cosmetic_fixes: bool
    bootstrap_resamples: int
    seed: int


@dataclass(frozen=True)
class SeenData:
    """Data read while the registration was written: for them its rules are not out of sample,
    so a run whose data contain any of them is exploratory (experiments/seen_data.py).

    Each field holds markers, not the data: a repository's root and newest commits and a
    1-in-256 sample of its commits (SHAs that start with ``00``), a board's project keys, a
    label corpus's record keys that start with ``00`` (record keys are SHA-256 of the record,
    so any sizeable part of the corpus holds some of them)."""

    git_commits: tuple[str, ...] = ()
    board_projects: tuple[str, ...] = ()
    label_record_keys: tuple[str, ...] = ()


@dataclass(frozen=True)
class Preregistration:
    """Parameters of a run, the file they came from, and whether the run is exploratory."""

    p1: P1Params
    p2: P2Params
    p3: P3Params
    agent_vs_human: AgentVsHumanParams
    path: str
    sha256: str
    version: int
    #: [seen]: optional (a file without it names no data as seen)
    seen: SeenData = SeenData()
    overrides: Mapping[str, Any] = field(default_factory=dict)
    exploratory: bool = False
    #: why the run is exploratory (the file vs the lock, then each changed override)
    reasons: tuple[str, ...] = ()
    #: the file compared with the lock (None: loaded without the check, e.g. by freeze)
    registration: Registration | None = None

    def provenance(self) -> dict[str, Any]:
        """The ``preregistration`` block of results.json (its ``registration`` entry becomes
        the top-level ``registration`` block)."""
        doc: dict[str, Any] = {
            "path": self.path,
            "sha256": self.sha256,
            "overrides": {k: _jsonable(v) for k, v in self.overrides.items()},
            "exploratory": self.exploratory,
            "exploratory_reasons": list(self.reasons),
        }
        if self.registration is not None:
            doc["registration"] = self.registration.to_dict()
        return doc


SECTIONS: dict[str, type[Any]] = {
    "p1": P1Params,
    "p2": P2Params,
    "p3": P3Params,
    "agent_vs_human": AgentVsHumanParams,
    "seen": SeenData,
}
#: Sections a file may leave out (their defaults apply).
OPTIONAL_SECTIONS = frozenset({"seen"})
#: Span rules of [agent_vs_human]: the months with an agent commit, or all history.
AGENT_VS_HUMAN_SPANS = ("agent-months", "all")


def registered_preregistration_path() -> Path:
    """The registered file: the checkout's ``preregistration.toml``, else the wheel's copy.

    Its sibling ``preregistration.lock`` is the lock every run is compared with.
    """
    checkout = Path(__file__).resolve().parents[3] / FILE_NAME
    if checkout.is_file():
        return checkout
    packaged = resources.files("agent_reflection").joinpath(f"data/{FILE_NAME}")
    if packaged.is_file():
        return Path(str(packaged))
    raise InvalidPreregistration(
        f"no registered {FILE_NAME} (looked at {checkout} and the installed package); "
        "reinstall agent-reflection or run from its checkout"
    )


def resolve_preregistration(
    path: str | os.PathLike[str] | None = None,
    *,
    cwd: Path | None = None,
    registered: Path | None = None,
) -> tuple[Path, str]:
    """(the effective file, the route that chose it). One rule, first match wins:

    1. ``--prereg FILE`` (``path``);
    2. ``$REFLECT_PREREGISTRATION``;
    3. ``preregistration.toml`` in the working folder (``cwd``, default the current one);
    4. the registered file (``registered``, default :func:`registered_preregistration_path`).
    """
    if path is not None and str(path) != "":
        return Path(path).resolve(), ROUTE_FLAG
    env = os.environ.get(PREREG_ENV)
    if env:
        return Path(env).resolve(), ROUTE_ENV
    local = (cwd if cwd is not None else Path.cwd()) / FILE_NAME
    if local.is_file():
        return local.resolve(), ROUTE_WORKING_FOLDER
    return registered or registered_preregistration_path(), ROUTE_REGISTERED


def default_preregistration_path() -> Path:
    """The effective file when no ``--prereg`` is given (see :func:`resolve_preregistration`)."""
    return resolve_preregistration(None)[0]


def load_preregistration(path: str | os.PathLike[str] | None = None) -> Preregistration:
    """Read, validate and hash a pre-registration file (no lock check: see load_for_run)."""
    p = Path(path) if path is not None else default_preregistration_path()
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise InvalidPreregistration(f"{p}: cannot read the pre-registration ({exc})") from None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise InvalidPreregistration(f"{p}: not valid TOML ({exc})") from None
    return parse_preregistration(data, source=str(p), sha256=hashlib.sha256(raw).hexdigest())


def parse_preregistration(data: Mapping[str, Any], *, source: str, sha256: str) -> Preregistration:
    check_keys(data, {"version", *SECTIONS}, source, error=InvalidPreregistration)
    version = data.get("version")
    if version != 1:
        raise InvalidPreregistration(f"{source}: version must be 1, got {version!r}")
    parsed: dict[str, Any] = {}
    for name, cls in SECTIONS.items():
        section = data.get(name)
        if section is None and name in OPTIONAL_SECTIONS:
            continue
        if not isinstance(section, dict):
            raise InvalidPreregistration(f"{source}: missing table [{name}]")
        _refuse_retired(name, section, f"{source}: [{name}]")
        parsed[name] = build(
            cls,
            section,
            f"{source}: [{name}]",
            error=InvalidPreregistration,
            check=_check_semantics,
        )
    return Preregistration(**parsed, path=source, sha256=sha256, version=1)


def _refuse_retired(section: str, table: Mapping[str, Any], where: str) -> None:
    for key, why in RETIRED_KEYS.get(section, {}).items():
        if key in table:
            raise InvalidPreregistration(f"{where}: {key} is a retired key: {why}")


def apply_overrides(prereg: Preregistration, overrides: Mapping[str, Any]) -> Preregistration:
    """Parameters with ``{"p1.high_confidence_threshold": 0.7, ...}`` applied.

    Keys are ``section.key``. Values are validated like the file's. The result is
    exploratory when any value differs from the file (an override equal to it is harmless).
    """
    sections = {n: getattr(prereg, n) for n in SECTIONS}
    exploratory = prereg.exploratory
    reasons = list(prereg.reasons)
    applied: dict[str, Any] = dict(prereg.overrides)
    for dotted, value in overrides.items():
        section, _, key = dotted.partition(".")
        if section not in SECTIONS or not key:
            raise InvalidPreregistration(
                f"override {dotted!r}: name it as section.key, e.g. p1.high_confidence_threshold"
            )
        _refuse_retired(section, {key: value}, f"override {dotted!r}: [{section}]")
        current = sections[section]
        names = {f.name: f for f in fields(current)}
        if key not in names:
            raise InvalidPreregistration(
                f"override {dotted!r}: [{section}] has no key {key!r}; known: {sorted(names)}"
            )
        new_value = coerce_field(
            type(current),
            key,
            value,
            f"override {dotted}",
            error=InvalidPreregistration,
            check=_check_semantics,
        )
        if new_value != getattr(current, key):
            exploratory = True
            reasons.append(
                f"override {dotted} = {_jsonable(new_value)!r} differs from the file's "
                f"{_jsonable(getattr(current, key))!r}"
            )
        sections[section] = replace(current, **{key: new_value})
        _check_semantics(sections[section], f"override {dotted}: [{section}]")
        applied[dotted] = new_value
    return replace(
        prereg, **sections, overrides=applied, exploratory=exploratory, reasons=tuple(reasons)
    )


def load_for_run(
    path: str | os.PathLike[str] | None,
    overrides: Mapping[str, Any],
    *,
    registered: Path | None = None,
) -> Preregistration:
    """The parameters of a run: the effective file, checked against the lock, plus overrides.

    ``path`` is ``--prereg`` (None: resolved by :func:`resolve_preregistration`).
    ``registered`` is the registered file (default :func:`registered_preregistration_path`);
    only its sibling lock is consulted.
    The run is exploratory when the file's SHA-256 is not the lock's newest, when there is no
    valid lock, or when an override changes a value; ``reasons`` says which.
    """
    registered_file = registered if registered is not None else registered_preregistration_path()
    effective, chosen_by = resolve_preregistration(path, registered=registered_file)
    prereg = load_preregistration(effective)
    registration = compare(
        route=chosen_by,
        path=prereg.path,
        sha256=prereg.sha256,
        lock_path=lock_path_for(registered_file),
        is_registered_file=_same_file(effective, registered_file),
    )
    prereg = replace(
        prereg,
        registration=registration,
        reasons=registration.reasons,
        exploratory=not registration.matches,
    )
    return apply_overrides(prereg, overrides)


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.samefile(b)
    except OSError:
        return False


def _in_unit(value: float, where: str, key: str) -> None:
    if not 0 <= value <= 1:
        raise InvalidPreregistration(f"{where}: {key} must be in [0, 1], got {value}")


def _regex(pattern: str | None, where: str, key: str) -> None:
    if pattern is None:
        return
    try:
        re.compile(pattern)
    except re.error as exc:
        raise InvalidPreregistration(f"{where}: {key} is not a valid regex ({exc})") from None


def _glob_list(patterns: tuple[str, ...], where: str, key: str) -> None:
    # Path globs are matched case-insensitively against a path (when they contain "/") or
    # against each path component (when they do not); see experiments/p2_paths.py.
    for pattern in patterns:
        if not pattern.strip() or pattern.startswith("/") or "\\" in pattern:
            raise InvalidPreregistration(
                f"{where}: {key} entry {pattern!r} must be a non-empty relative glob using '/'"
            )


#: P2's verdict statistics (``[p2] share_statistic``)
P2_SHARE_STATISTICS = ("gate-corrected", "precision-corrected", "raw")


def _check_gate_keys(obj: P2Params, where: str) -> None:
    if obj.share_statistic not in P2_SHARE_STATISTICS:
        raise InvalidPreregistration(
            f"{where}: share_statistic must be one of {list(P2_SHARE_STATISTICS)}, "
            f"got {obj.share_statistic!r}"
        )
    if obj.gate_min_labelled < 1:
        raise InvalidPreregistration(f"{where}: gate_min_labelled must be >= 1")
    if obj.gate_bootstrap_resamples < 100:
        raise InvalidPreregistration(
            f"{where}: gate_bootstrap_resamples must be >= 100 (a percentile interval needs "
            f"its tails), got {obj.gate_bootstrap_resamples}"
        )
    if obj.gate_bootstrap_seed < 0:
        raise InvalidPreregistration(f"{where}: gate_bootstrap_seed must be >= 0")
    shipped = [path for path in obj.gate_labels_paths if path in obj.second_rater_labels_paths]
    if shipped:
        raise InvalidPreregistration(
            f"{where}: gate_labels_paths {shipped} are the shipped second rater's "
            "(second_rater_labels_paths): list the team's own gate labels here"
        )
    if obj.gate_label_buckets_paths and not obj.second_rater_labels_paths:
        raise InvalidPreregistration(
            f"{where}: gate_label_buckets_paths needs second_rater_labels_paths (it gives "
            "P2's bucket of each signal those files label)"
        )


def _check_semantics(obj: Any, where: str) -> None:
    if isinstance(obj, P1Params):
        if obj.label_source not in ("corpus", "loop"):
            raise InvalidPreregistration(f"{where}: label_source must be 'corpus' or 'loop'")
        if obj.ci_method not in P1_CI_METHODS:
            raise InvalidPreregistration(f"{where}: ci_method must be one of {list(P1_CI_METHODS)}")
        if obj.bootstrap_method != "percentile":
            raise InvalidPreregistration(
                f"{where}: bootstrap_method must be 'percentile' (the cluster bootstrap's interval)"
            )
        _in_unit(obj.high_confidence_threshold, where, "high_confidence_threshold")
        if not 0 < obj.confidence_level < 1:
            raise InvalidPreregistration(f"{where}: confidence_level must be in (0, 1)")
        if not 0.5 < obj.smallest_useful_auc < 1:
            raise InvalidPreregistration(
                f"{where}: smallest_useful_auc must be in (0.5, 1) (0.5 is chance), "
                f"got {obj.smallest_useful_auc}"
            )
        if not 0 < obj.power < 1:
            raise InvalidPreregistration(f"{where}: power must be in (0, 1), got {obj.power}")
        edges = obj.ece_bins
        if len(edges) < 2 or any(b <= a for a, b in itertools.pairwise(edges)):
            raise InvalidPreregistration(f"{where}: ece_bins must be increasing edges")
        if not 0 < obj.lift_fraction <= 1:
            raise InvalidPreregistration(f"{where}: lift_fraction must be in (0, 1]")
        if obj.bootstrap_resamples < 1:
            raise InvalidPreregistration(f"{where}: bootstrap_resamples must be >= 1")
        if obj.bootstrap_draws not in P1_BOOTSTRAP_DRAWS:
            raise InvalidPreregistration(
                f"{where}: bootstrap_draws must be one of {list(P1_BOOTSTRAP_DRAWS)}, "
                f"got {obj.bootstrap_draws!r}"
            )
        if obj.bootstrap_budget < 0:
            raise InvalidPreregistration(f"{where}: bootstrap_budget must be >= 0 (0: no budget)")
        if obj.loop_window_days < 1:
            raise InvalidPreregistration(f"{where}: loop_window_days must be >= 1")
        if obj.loop_link_hours_before < 0 or obj.loop_link_hours_after < 0:
            raise InvalidPreregistration(f"{where}: loop_link_hours_* must be >= 0")
        if not 0 < obj.loop_link_min_jaccard <= 1:
            raise InvalidPreregistration(
                f"{where}: loop_link_min_jaccard must be in (0, 1], got {obj.loop_link_min_jaccard}"
            )
    elif isinstance(obj, P2Params):
        if obj.time_column not in ("committer_time", "author_time"):
            raise InvalidPreregistration(
                f"{where}: time_column must be committer_time or author_time"
            )
        if obj.window_days < 0:
            raise InvalidPreregistration(f"{where}: window_days must be >= 0")
        _in_unit(obj.risk_threshold, where, "risk_threshold")
        if not 0 < obj.smallest_useful_share < 1:
            raise InvalidPreregistration(f"{where}: smallest_useful_share must be in (0, 1)")
        if not 0 < obj.confidence_level < 1:
            raise InvalidPreregistration(f"{where}: confidence_level must be in (0, 1)")
        _regex(obj.cosmetic_lint_message, where, "cosmetic_lint_message")
        _regex(obj.cosmetic_typo_message, where, "cosmetic_typo_message")
        _regex(obj.new_test_message, where, "new_test_message")
        if obj.fix_wording not in FIX_WORDINGS:
            raise InvalidPreregistration(
                f"{where}: fix_wording must be one of {list(FIX_WORDINGS)}, got {obj.fix_wording!r}"
            )
        outside = [h for h in obj.holdout_labels_paths if h not in obj.labels_paths]
        if outside:
            raise InvalidPreregistration(
                f"{where}: holdout_labels_paths {outside} must also be listed in labels_paths"
            )
        if obj.min_labelled_for_precision < 0:
            raise InvalidPreregistration(f"{where}: min_labelled_for_precision must be >= 0")
        if obj.min_signals < 1:
            raise InvalidPreregistration(f"{where}: min_signals must be >= 1")
        if obj.gate_sample_per_bucket < 1 or obj.gate_sample_seed < 0:
            raise InvalidPreregistration(
                f"{where}: gate_sample_per_bucket must be >= 1 and gate_sample_seed >= 0"
            )
        bad_conclusions = [c for c in obj.ci_failed_conclusions if c != c.strip().lower() or not c]
        if bad_conclusions:
            raise InvalidPreregistration(
                f"{where}: ci_failed_conclusions must be lower-case conclusions as ci_runs "
                f"stores them (failure, timed_out, ...), got {bad_conclusions}"
            )
        if "success" in obj.ci_failed_conclusions:
            raise InvalidPreregistration(f"{where}: ci_failed_conclusions cannot list success")
        _glob_list(obj.non_code_paths, where, "non_code_paths")
        _glob_list(obj.test_paths, where, "test_paths")
        for name in (
            "labels_paths",
            "second_rater_labels_paths",
            "adjudication_paths",
            "gate_labels_paths",
            "gate_label_buckets_paths",
        ):
            if any(not path.strip() or Path(path).is_absolute() for path in getattr(obj, name)):
                raise InvalidPreregistration(
                    f"{where}: {name} entries must be non-empty paths relative to the file"
                )
        shared = [path for path in obj.second_rater_labels_paths if path in obj.labels_paths]
        if shared:
            raise InvalidPreregistration(
                f"{where}: second_rater_labels_paths {shared} must not be in labels_paths (the "
                "first rater's labels): the raters are compared, not pooled"
            )
        if obj.adjudication_paths and not obj.second_rater_labels_paths:
            raise InvalidPreregistration(
                f"{where}: adjudication_paths needs second_rater_labels_paths (it adjudicates "
                "their disagreements with labels_paths)"
            )
        _check_gate_keys(obj, where)
        if not obj.rules:
            raise InvalidPreregistration(f"{where}: [[p2.rules]] must list at least one rule")
        last = obj.rules[-1]
        if (
            last.fixing_paths_all
            or last.fixing_message
            or last.failing_risk_needs_review is not None
        ):
            raise InvalidPreregistration(
                f"{where}: the last rule must have no conditions (a catch-all), so every "
                "counted signal gets a bucket"
            )
    elif isinstance(obj, Rule):
        if obj.bucket not in BUCKETS:
            raise InvalidPreregistration(f"{where}: bucket must be one of {list(BUCKETS)}")
        _regex(obj.fixing_message, where, "fixing_message")
        _glob_list(obj.fixing_paths_all, where, "fixing_paths_all")
    elif isinstance(obj, P3Params):
        _check_p3(obj, where)
    elif isinstance(obj, AgentVsHumanParams):
        _check_agent_vs_human(obj, where)
    elif isinstance(obj, LinkRule):
        _regex(obj.kind, where, "kind")
        if obj.direction not in ("inward", "outward"):
            raise InvalidPreregistration(
                f"{where}: direction must be 'inward' or 'outward', got {obj.direction!r}"
            )


def _check_p3(obj: P3Params, where: str) -> None:
    from agent_reflection.load.board.channels import CHANNELS

    if obj.as_of != "data":
        _parse_instant(obj.as_of, where)
    if not 0 < obj.smallest_useful_fraction <= 1:
        raise InvalidPreregistration(f"{where}: smallest_useful_fraction must be in (0, 1]")
    if not 0 < obj.confidence_level < 1:
        raise InvalidPreregistration(f"{where}: confidence_level must be in (0, 1)")
    _regex(obj.reopen_status_pattern, where, "reopen_status_pattern")
    _regex(obj.verified_pattern, where, "verified_pattern")
    if obj.window_days < 0 or obj.min_follow_up_days < 0:
        raise InvalidPreregistration(f"{where}: day counts must be >= 0")
    unknown = [c for c in obj.required_channels if c not in CHANNELS]
    if unknown or len(set(obj.required_channels)) != len(obj.required_channels):
        raise InvalidPreregistration(
            f"{where}: required_channels must name distinct channels among {list(CHANNELS)}, "
            f"got {list(obj.required_channels)}"
        )
    _regex(obj.cross_reference_pattern, where, "cross_reference_pattern")
    switched_off = {
        "commits": not obj.commit_signals,
        "regression-link": not obj.regression_links,
        "cross-reference": not obj.cross_reference_kinds,
    }
    off = [c for c in obj.required_channels if switched_off.get(c)]
    if off:
        raise InvalidPreregistration(
            f"{where}: required channel(s) {off} are switched off (commit_signals = false, "
            "no [[p3.regression_links]] or cross_reference_kinds = []): no source could ever "
            "carry them"
        )


def _check_agent_vs_human(obj: AgentVsHumanParams, where: str) -> None:
    if obj.span not in AGENT_VS_HUMAN_SPANS:
        raise InvalidPreregistration(
            f"{where}: span must be one of {list(AGENT_VS_HUMAN_SPANS)}, got {obj.span!r}"
        )
    if obj.time_column not in ("committer_time", "author_time"):
        raise InvalidPreregistration(f"{where}: time_column must be committer_time or author_time")
    if obj.follow_up_days < 0:
        raise InvalidPreregistration(f"{where}: follow_up_days must be >= 0")
    if not 0 < obj.confidence_level < 1:
        raise InvalidPreregistration(f"{where}: confidence_level must be in (0, 1)")
    if obj.min_group_commits < 1:
        raise InvalidPreregistration(f"{where}: min_group_commits must be >= 1")
    if obj.bootstrap_resamples < 1:
        raise InvalidPreregistration(f"{where}: bootstrap_resamples must be >= 1")


def _parse_instant(value: str, where: str) -> None:
    from datetime import datetime

    try:
        datetime.fromisoformat(value)
    except ValueError:
        raise InvalidPreregistration(
            f"{where}: as_of must be 'data' or an ISO-8601 instant, got {value!r}"
        ) from None


def _jsonable(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_jsonable(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {k: _jsonable(v) for k, v in dataclasses.asdict(value).items()}
    return value


def params_dict(params: Any) -> dict[str, Any]:
    """A section's parameters as plain JSON-able data (for results.json)."""
    return {k: _jsonable(v) for k, v in dataclasses.asdict(params).items()}
