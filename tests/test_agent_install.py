"""The reflection agent definition and ``reflect agent install``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent_reflection.in_loop.agent_install import (
    AGENT_FILE,
    AgentFileModified,
    agents_dir,
    install_agent,
    is_untouched,
    shipped_definition,
    stamp,
)
from agent_reflection.in_loop.escalation_contract import (
    RETRY_PACKET_FIELDS,
    TERMINAL_FIELDS,
    parse_blocks,
    parse_escalations,
)

REFLECT = str(Path(sys.executable).parent / "reflect")


def frontmatter(text: str) -> dict[str, str]:
    assert text.startswith("---\n")
    head = text.split("---\n", 2)[1]
    lines = [ln for ln in head.strip().splitlines() if not ln.startswith("#")]
    return dict(line.split(": ", 1) for line in lines)


def test_definition_has_claude_code_frontmatter() -> None:
    meta = frontmatter(shipped_definition())
    assert meta["name"] == "reflection-unblocker"
    assert "ESCALATION" in meta["description"]
    tools = [t.strip() for t in meta["tools"].split(",")]
    # the design's permissions: edit and bash allowed, browser denied
    assert {"Edit", "Write", "Bash", "Read", "Grep", "Glob"} <= set(tools)
    assert not {"WebFetch", "WebSearch"} & set(tools)
    assert [t.strip() for t in meta["disallowedTools"].split(",")] == ["WebFetch", "WebSearch"]
    assert (meta["model"], meta["maxTurns"]) == ("inherit", "80")
    notes = shipped_definition().split("---\n", 2)[1]
    assert "temperature 0.0" in notes and "glm-5.1" in notes  # said, not silently dropped


def test_definition_templates_parse_with_our_contract() -> None:
    text = shipped_definition()
    (terminal,) = parse_escalations(text)
    assert tuple(terminal.fields) == TERMINAL_FIELDS
    (packet,) = parse_blocks(text, "RETRY_PACKET")
    assert tuple(packet.fields) == RETRY_PACKET_FIELDS
    for marker in (
        "[NEED_CONTEXT: escalation_payload]",
        "[NEED_CONTEXT: clean_handoff]",
        "[COHERENCE_CHECK_FAILED]",
        "<DECISION_REVISION>",
        "@REJECTED",
    ):
        assert marker in text


def test_install_is_idempotent_and_updates_untouched_copies(tmp_path: Path) -> None:
    folder = tmp_path / ".claude" / "agents"
    assert install_agent(folder).action == "installed"
    assert install_agent(folder).action == "unchanged"
    path = folder / AGENT_FILE
    assert is_untouched(path.read_text())
    path.write_text(stamp("---\nname: reflection-unblocker\n---\nolder shipped text\n"))
    assert install_agent(folder).action == "updated"
    assert path.read_text() == shipped_definition()
    assert sorted(p.name for p in folder.iterdir()) == [AGENT_FILE]


def test_user_edits_are_kept_unless_forced(tmp_path: Path) -> None:
    install_agent(tmp_path)
    path = tmp_path / AGENT_FILE
    edited = path.read_text().replace("Keep the reply short.", "Keep the reply very short.")
    path.write_text(edited)
    with pytest.raises(AgentFileModified, match="--force"):
        install_agent(tmp_path)
    assert path.read_text() == edited
    assert install_agent(tmp_path, force=True).action == "overwritten"
    assert path.read_text() == shipped_definition()


def test_agents_dir_scopes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert agents_dir("project", tmp_path) == tmp_path / ".claude" / "agents"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "conf"))
    assert agents_dir("user") == tmp_path / "conf" / "agents"
    with pytest.raises(ValueError):
        agents_dir("global")


def run_reflect(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(home)}
    env.pop("CLAUDE_CONFIG_DIR", None)
    return subprocess.run([REFLECT, *args], capture_output=True, text=True, env=env)


def test_cli_project_and_user_install(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    out = run_reflect("agent", "install", "--project-dir", str(project), home=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("installed: ")
    assert (project / ".claude" / "agents" / AGENT_FILE).is_file()
    again = run_reflect("agent", "install", "--project-dir", str(project), home=tmp_path)
    assert again.stdout.startswith("unchanged: ")
    user = run_reflect("agent", "install", "--user", home=tmp_path)
    assert user.returncode == 0, user.stderr
    assert (tmp_path / ".claude" / "agents" / AGENT_FILE).is_file()


def test_cli_refuses_modified_copy_with_a_clean_message(tmp_path: Path) -> None:
    target = tmp_path / ".claude" / "agents" / AGENT_FILE
    target.parent.mkdir(parents=True)
    target.write_text("my own agent\n")
    out = run_reflect("agent", "install", "--project-dir", str(tmp_path), home=tmp_path)
    assert out.returncode == 1
    assert "--force" in out.stderr and "Traceback" not in out.stderr
    assert target.read_text() == "my own agent\n"
    forced = run_reflect(
        "agent", "install", "--project-dir", str(tmp_path), "--force", home=tmp_path
    )
    assert forced.stdout.startswith("overwritten: ")
