"""Reading tier-2 answers: SKILL_ACTION paragraphs (v1 superset) and the JSON tail (peer C4)."""

from __future__ import annotations

import pytest

from agent_reflection.cycle.extract import (
    count_markers,
    json_tail,
    recommended_skill_actions,
    skill_action_paragraphs,
)

ONE = "obs…\n\nSKILL_ACTION: rewrite deploy.md\nbecause X\n\nmore"
TWO = "intro\n\nSKILL_ACTION: rewrite deploy.md\n\nSKILL_ACTION: retire backup.md\nold\n"


@pytest.mark.peer
@pytest.mark.parametrize(
    ("text", "paragraphs", "markers"),
    [
        pytest.param(ONE, ["rewrite deploy.md\nbecause X"], 1, id="C4.1-v1"),
        pytest.param(TWO, ["rewrite deploy.md", "retire backup.md\nold"], 2, id="C4.2-v1"),
        pytest.param('prose\n{"skill_actions": ["a","b"]}', [], 0, id="C4.3-v1"),
    ],
)
def test_c4_skill_action_paragraphs(text: str, paragraphs: list[str], markers: int) -> None:
    # The peer's v1 kept the marker line text and spawned only the first paragraph; we strip
    # the marker (the objective is the recommendation) and keep every paragraph (the issue).
    assert skill_action_paragraphs(text) == paragraphs
    assert count_markers(text) == markers


@pytest.mark.peer
@pytest.mark.parametrize(
    ("text", "skills", "tasks"),
    [
        pytest.param(ONE, [], [], id="C4.1-head"),
        pytest.param(TWO, [], [], id="C4.2-head"),
        pytest.param('prose\n{"skill_actions": ["a","b"]}', ["a", "b"], [], id="C4.3"),
        pytest.param('{"skill_actions": ["a"]}\nmore prose', [], [], id="C4.4"),
        pytest.param('x {"skill_actions": ["", null, "x"]}', ["x"], [], id="C4.5"),
        pytest.param('x {"skill_actions": ["fix {x}"]}', ["fix {x}"], [], id="C4.6"),
        pytest.param('x {"skill_actions": [}', [], [], id="C4.7"),
        pytest.param(
            'x {"task_actions": [{"content":"c","ai_prompt":"p"},{"content":"d","ai_prompt":"q"}]}',
            [],
            [{"content": "c", "ai_prompt": "p"}],
            id="C4.8",
        ),
        pytest.param('x {"task_actions": [{"content":"c"}]}', [], [], id="C4.9"),
    ],
)
def test_c4_json_tail(text: str, skills: list[str], tasks: list[dict[str, str]]) -> None:
    tail = json_tail(text)
    assert list(tail.skill_actions) == skills
    assert list(tail.task_actions) == tasks


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            "- skill_action: merge the two deploy skills",
            ["merge the two deploy skills"],
            id="lower-case-bullet",
        ),
        pytest.param(
            "1. **SKILL_ACTION:** retire old.md\n2. **Skill Action**: add db.md",
            ["retire old.md", "add db.md"],
            id="numbered-bold-two",
        ),
        pytest.param(
            "* Skill action: split a.md\n  into two files\n\nthanks",
            ["split a.md\ninto two files"],
            id="star-continuation",
        ),
        pytest.param("SKILL_ACTION:\nrewrite x.md\n", ["rewrite x.md"], id="text-on-next-line"),
        pytest.param("no markers here", [], id="none"),
    ],
)
def test_paragraphs_are_robust_to_case_bullets_and_several(text: str, expected: list[str]) -> None:
    assert skill_action_paragraphs(text) == expected


def test_json_tail_in_a_code_fence_and_merged_recommendations() -> None:
    text = (
        "SKILL_ACTION: rewrite deploy.md\n\n```json\n"
        '{"skill_actions": ["rewrite deploy.md", "retire old.md"], "task_actions": []}\n```\n'
    )
    assert json_tail(text).found
    assert recommended_skill_actions(text) == ["rewrite deploy.md", "retire old.md"]
