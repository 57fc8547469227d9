"""P2's rule conditions and buckets are declared once (experiments/p2/buckets.py): the
registration reads [[p2.rules]] through the registry, the rules apply it, the report and the
docs describe it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agent_reflection.experiments.p2 import buckets
from agent_reflection.experiments.p2.buckets import (
    BUCKETS,
    CONDITIONS,
    Condition,
    Facts,
    classify,
    describe_rule,
)
from agent_reflection.experiments.p2.gates import GATE_CLASSES, NOT_A_FAILURE
from agent_reflection.experiments.p2.raters import GATES
from agent_reflection.experiments.registration import (
    InvalidPreregistration,
    apply_overrides,
    load_preregistration,
    params_dict,
)
from conftest import REPO_ROOT

FILE = REPO_ROOT / "preregistration.toml"
LAST_RULE = '[[p2.rules]]\nname = "otherwise"\nbucket = "only-self-reflection"\n'


def with_rule(tmp_path: Path, rule: str) -> Path:
    """The registered file with ``rule`` inserted before its catch-all rule."""
    text = FILE.read_text()
    assert LAST_RULE in text
    path = tmp_path / "prereg.toml"
    path.write_text(text.replace(LAST_RULE, rule + "\n" + LAST_RULE, 1))
    return path


def test_an_unknown_condition_key_is_an_error_listing_the_registered_ones(tmp_path: Path) -> None:
    path = with_rule(tmp_path, '[[p2.rules]]\nname = "x"\nbucket = "ci"\nfixing_author = "bot"\n')
    with pytest.raises(InvalidPreregistration) as exc:
        load_preregistration(path)
    message = str(exc.value)
    assert message.startswith(f"{path}: [p2].rules[5]: unknown key(s) ['fixing_author']")
    for condition in CONDITIONS:
        assert condition.key in message


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        ('fixing_message = "("', "fixing_message is not a valid regex"),
        ("fixing_message = 3", "fixing_message must be a string, got 3"),
        ('fixing_paths_all = ["/abs"]', "fixing_paths_all entry '/abs' must be a non-empty"),
        ('failing_risk_needs_review = "yes"', "failing_risk_needs_review must be true/false"),
    ],
)
def test_each_condition_reads_its_own_value(tmp_path: Path, rule: str, message: str) -> None:
    path = with_rule(tmp_path, f'[[p2.rules]]\nname = "x"\nbucket = "ci"\n{rule}\n')
    with pytest.raises(InvalidPreregistration, match=re.escape(f"[p2].rules[5]: {message}")):
        load_preregistration(path)


def test_every_registered_condition_is_documented() -> None:
    """docs/experiments.md's table of rule conditions has each registered key with its value
    and meaning, as the registry says them (the report's wording is the registry's too)."""
    docs = (REPO_ROOT / "docs" / "experiments.md").read_text("utf-8")
    for c in CONDITIONS:
        assert c.description and c.value
        assert f"| `{c.key}` | {c.value} | {c.description} |" in docs
    assert ", ".join(f"`{b}`" for b in BUCKETS) in docs


def test_the_buckets_are_declared_once() -> None:
    """The gates a rater names and the classes of the correction matrix follow BUCKETS."""
    assert GATES[: len(BUCKETS)] == BUCKETS and GATES[len(BUCKETS) :] == ("unclear",)
    assert (*GATES, NOT_A_FAILURE) == GATE_CLASSES


def _subject_says(word: str, facts: Facts) -> str | None:
    return f"the subject says {word!r}" if word in facts.message.split("\n")[0] else None


def _word(value: object) -> str:
    if not isinstance(value, str) or not value.isalpha():
        raise ValueError(f"must be one word, got {value!r}")
    return value


def test_a_new_condition_is_one_declaration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A condition added to the registry alone: the registration reads it (and checks its
    value), a rule applies it, the report describes it and results.json shows it."""
    subject = Condition(
        "fixing_subject_word", "a word", "the fixing subject has this word", _word, _subject_says
    )
    monkeypatch.setattr(buckets, "CONDITIONS", (*CONDITIONS, subject))
    rule = (
        '[[p2.rules]]\nname = "hotfix"\nbucket = "human-review"\nfixing_subject_word = "hotfix"\n'
    )
    prereg = load_preregistration(with_rule(tmp_path, rule))
    hotfix = prereg.p2.rules[5]
    assert (hotfix.name, hotfix.bucket, hotfix.conditions) == (
        "hotfix",
        "human-review",
        {"fixing_subject_word": "hotfix"},
    )
    facts = Facts(("src/x.py",), "hotfix: the cli crash", None)
    c = classify(prereg.p2.rules, facts)
    assert (c.bucket, c.rule, c.why) == ("human-review", "hotfix", "the subject says 'hotfix'")
    assert classify(prereg.p2.rules, Facts(("src/x.py",), "fix: x", None)).rule == "otherwise"
    assert describe_rule(hotfix) == (
        "hotfix: the fixing subject has this word: 'hotfix' -> human-review"
    )
    shown = params_dict(prereg.p2)["rules"][5]
    assert shown["fixing_subject_word"] == "hotfix" and shown["fixing_message"] is None
    with pytest.raises(InvalidPreregistration, match="fixing_subject_word must be one word"):
        load_preregistration(with_rule(tmp_path, rule.replace('"hotfix"', '"two words"')))


def test_the_rules_are_shown_as_they_were_before_the_registry() -> None:
    """results.json's parameters list every condition of every rule, unset ones as null / []."""
    rules = params_dict(load_preregistration(FILE).p2)["rules"]
    assert [sorted(r) for r in rules] == [
        sorted(["name", "bucket", *(c.key for c in CONDITIONS)])
    ] * len(rules)
    assert rules[-1] == {
        "name": "otherwise",
        "bucket": "only-self-reflection",
        "fixing_message": None,
        "fixing_paths_all": [],
        "failing_risk_needs_review": None,
        "failing_reviewed_max_lines": None,
    }


def test_rules_can_be_overridden_and_the_override_is_read_by_the_registry() -> None:
    prereg = load_preregistration(FILE)
    catch_all = {"name": "all", "bucket": "only-self-reflection"}
    changed = apply_overrides(prereg, {"p2.rules": [catch_all]})
    assert changed.exploratory and [r.name for r in changed.p2.rules] == ["all"]
    with pytest.raises(InvalidPreregistration, match=r"override p2.rules.rules\[0\]: unknown"):
        apply_overrides(prereg, {"p2.rules": [{**catch_all, "fixing_what": 1}]})
