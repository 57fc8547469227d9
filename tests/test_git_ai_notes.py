"""git-ai and whogitit notes as an attribution source (load/git/ai_notes.py): real git, DuckDB.

The notes are written here with `git notes --ref=ai add` / `--ref=whogitit`, shaped as the
formats' own documents show them:

- git-ai: Git AI Standard v3.0.0 (git-ai-project/git-ai, specs/git_ai_standard_v3.0.0.md),
  §1.2.2 (two sections around a `---` line), §1.2.3 (attestation lines, key formats §1.2.3.1),
  §1.2.4 (metadata), examples §1.2.5 (sessions format) and §1.2.6 (legacy prompts format);
- whogitit: docs/src/reference/data-formats.md of dotsetlabs/whogitit ("AIAttribution (Git
  Notes)", version 3; version 2 as its 0.1.0 release documents it).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import duckdb
import pytest

from agent_reflection.experiments.agent_vs_human import analysis as avh
from agent_reflection.experiments.registration import load_preregistration
from agent_reflection.load.git.ai_notes import (
    LineRange,
    NoteAttribution,
    NoteProblem,
    apply_agents,
    load_ai_notes,
    parse_git_ai_note,
    parse_note,
    parse_whogitit_note,
)
from agent_reflection.load.git.history import load_git_history
from agent_reflection.load.git.repo import open_repo
from agent_reflection.store.db import connect
from cli_inprocess import reflect
from conftest import run_git

CLAUDE_TRAILER = "\n\nCo-Authored-By: Claude <noreply@anthropic.com>"

# §1.2.5: sessions format (one AI session with two traces, a known human, a second session)
SESSIONS_NOTE = """\
src/main.rs
  s_c9883b05a2487d::t_9f8e7d6c5b4a32 1-10,15-20
  s_c9883b05a2487d::t_a1b2c3d4e5f678 25,30-35
  h_31dce776f88375 42-50
src/lib.rs
  s_e7f2a90b31cc48::t_deadbeef012345 1-50
---
{
  "schema_version": "authorship/3.0.0",
  "git_ai_version": "1.4.5",
  "base_commit_sha": "7734793b756b3921c88db5375a8c156e9532447b",
  "prompts": {},
  "humans": {"h_31dce776f88375": {"author": "Developer <dev@example.com>"}},
  "sessions": {
    "s_c9883b05a2487d": {
      "agent_id": {"tool": "cursor", "id": "6ef2299e", "model": "claude-sonnet-4-5-20250514"},
      "human_author": "dev@example.com"
    },
    "s_e7f2a90b31cc48": {
      "agent_id": {"tool": "claude", "id": "conv_abc123def456", "model": "claude-sonnet-4-5"},
      "human_author": "dev@example.com",
      "custom_attributes": {"team": "backend"}
    }
  }
}
"""


def git_ai_note(path: str, key: str, ranges: str, tool: str, model: str, conv: str) -> str:
    """A sessions-format authorship log (§1.2.5) for one file and one AI session."""
    session = key.split("::")[0]
    meta = {
        "schema_version": "authorship/3.0.0",
        "git_ai_version": "1.6.21",
        "base_commit_sha": "0" * 40,
        "prompts": {},
        "sessions": {session: {"agent_id": {"tool": tool, "id": conv, "model": model}}},
    }
    return f"{path}\n  {key} {ranges}\n---\n{json.dumps(meta, indent=2)}\n"


def legacy_note(path: str, key: str, ranges: str, tool: str, model: str) -> str:
    """A legacy prompts-format authorship log (§1.2.6)."""
    meta = {
        "schema_version": "authorship/3.0.0",
        "git_ai_version": "1.0.23",
        "base_commit_sha": "0" * 40,
        "prompts": {
            key: {
                "agent_id": {"tool": tool, "id": "a1b2", "model": model},
                "human_author": "Developer <dev@example.com>",
                "total_additions": 3,
                "total_deletions": 0,
                "accepted_lines": 3,
                "overriden_lines": 0,
            }
        },
    }
    return f"{path}\n  {key} {ranges}\n---\n{json.dumps(meta, indent=2)}\n"


def whogitit_note(path: str, sources: list[str], version: int = 3) -> str:
    """whogitit's AIAttribution: one entry per line of ``path`` with its source type."""
    if version == 3:
        lines = [
            {"line_number": n, "content": "x", "source": {"type": s, "edit_id": "e1"}}
            for n, s in enumerate(sources, start=1)
        ]
        head: dict[str, object] = {"version": 3}
    else:
        lines = [{"line_number": n, "source": s} for n, s in enumerate(sources, start=1)]
        head = {"schema_version": 2}
    doc = {
        **head,
        "session": {
            "session_id": "7f3a4b2c-9d1e",
            "model": {"id": "claude-opus-4-5-20251101", "provider": "anthropic"},
            "started_at": "2026-01-30T14:23:17Z",
        },
        "prompts": [{"index": 0, "text": "Add auth", "affected_files": [path]}],
        "files": [{"path": path, "lines": lines, "summary": {"total_lines": len(sources)}}],
    }
    return json.dumps(doc, indent=2)


def commit(repo: Path, message: str, files: dict[str, str], day: str = "2026-01-10") -> str:
    for name, text in files.items():
        (repo / name).write_text(text)
        run_git(repo, "add", name)
    stamp = {"GIT_AUTHOR_DATE": f"{day}T12:00:00Z", "GIT_COMMITTER_DATE": f"{day}T12:00:00Z"}
    run_git(repo, "commit", "-q", "-m", message, env=stamp)
    return run_git(repo, "rev-parse", "HEAD").strip()


def add_note(repo: Path, ref: str, sha: str, text: str) -> None:
    """``git notes --ref=<ref> add -f -F <file> <sha>``, as git-ai itself writes its notes."""
    note = repo.parent / f"note-{ref}-{sha[:8]}.txt"
    note.write_text(text)
    run_git(repo, "notes", f"--ref={ref}", "add", "-f", "-F", str(note), sha)


def lines(n: int) -> str:
    return "".join(f"line {i}\n" for i in range(1, n + 1))


@pytest.fixture
def repo(tmp_path: Path) -> dict[str, str]:
    """Commits by role; ``path`` is the repository."""
    path = tmp_path / "shop"
    path.mkdir()
    run_git(path, "init", "-q", "-b", "main")
    c = {"path": str(path)}
    c["human"] = commit(path, "Add base", {"base.py": lines(3)}, "2026-01-02")
    c["gitai"] = commit(path, "Add cart", {"cart.py": lines(12)}, "2026-01-03")
    c["legacy"] = commit(path, "Add pay", {"pay.py": lines(4)}, "2026-01-04")
    c["both"] = commit(path, "Add tax" + CLAUDE_TRAILER, {"tax.py": lines(5)}, "2026-01-05")
    c["trailer"] = commit(path, "Add ship" + CLAUDE_TRAILER, {"ship.py": lines(2)}, "2026-01-06")
    c["bad"] = commit(path, "Add stock", {"stock.py": lines(3)}, "2026-01-07")
    c["whogitit"] = commit(path, "Add auth", {"auth.py": lines(6)}, "2026-01-08")
    c["humanonly"] = commit(path, "Add docs", {"docs.py": lines(4)}, "2026-01-09")
    add_note(
        path,
        "ai",
        c["gitai"],
        git_ai_note(
            "cart.py", "s_0123456789abcd::t_00000000000001", "1-4,9-12", "claude", "opus", "uuid-1"
        ),
    )
    add_note(
        path, "ai", c["legacy"], legacy_note("pay.py", "abcd1234abcd1234", "2-4", "cursor", "gpt-5")
    )
    # a trailer says claude-code, the note says cursor: the note wins
    add_note(
        path,
        "ai",
        c["both"],
        git_ai_note("tax.py", "s_aaaaaaaaaaaaaa::t_bbbbbbbbbbbbbb", "1-5", "cursor", "gpt-5", "c9"),
    )
    # a range that is not one (§1.2.3 "Line Range Specification")
    add_note(
        path,
        "ai",
        c["bad"],
        git_ai_note("stock.py", "s_cccccccccccccc::t_dddddddddddddd", "3-x", "claude", "m", "u"),
    )
    add_note(
        path,
        "whogitit",
        c["whogitit"],
        whogitit_note("auth.py", ["AI", "AI", "Human", "AIModified", "AI", "Original"]),
    )
    # only a known human's lines (§1.2.3.1 h_ keys): not an agent commit
    human_only = (
        "docs.py\n  h_31dce776f88375 1-4\n---\n"
        + json.dumps(
            {
                "schema_version": "authorship/3.0.0",
                "base_commit_sha": "0" * 40,
                "prompts": {},
                "humans": {"h_31dce776f88375": {"author": "Dev <dev@example.com>"}},
            }
        )
        + "\n"
    )
    add_note(path, "ai", c["humanonly"], human_only)
    return c


def load(con: duckdb.DuckDBPyConnection, path: str):  # type: ignore[no-untyped-def]
    load_git_history(con, path)
    return load_ai_notes(con, path)


def agents(con: duckdb.DuckDBPyConnection) -> dict[str, tuple[str | None, str | None]]:
    rows = con.execute("SELECT sha, agent, agent_source FROM commits").fetchall()
    return {sha: (agent, source) for sha, agent, source in rows}


def attributions(con: duckdb.DuckDBPyConnection) -> list[tuple[object, ...]]:
    return con.execute(
        "SELECT sha, path, start_line, end_line, agent, tool, model, session_id, kind, source "
        "FROM ai_line_attributions ORDER BY ALL"
    ).fetchall()


def test_notes_set_the_agent_and_the_line_ranges(repo: dict[str, str], tmp_path: Path) -> None:
    con = connect(tmp_path / "ai.duckdb")
    summaries = load(con, repo["path"])
    assert [s.detail["ref"] for s in summaries] == ["refs/notes/ai", "refs/notes/whogitit"]
    git_ai, whogitit = summaries
    assert all(s.reconciles for s in summaries)
    assert (git_ai.read, git_ai.loaded, git_ai.rejected) == (5, 4, 1)
    assert (whogitit.read, whogitit.loaded, whogitit.rejected) == (1, 1, 0)
    c = repo
    assert agents(con) == {
        c["human"]: (None, None),
        c["gitai"]: ("claude-code", "git-ai-note"),  # tool "claude" is our claude-code
        c["legacy"]: ("cursor", "git-ai-note"),
        c["both"]: ("cursor", "git-ai-note"),  # the note beats the Claude trailer
        c["trailer"]: ("claude-code", "trailer"),
        c["bad"]: (None, None),  # its note is rejected: no mark
        c["whogitit"]: ("claude-code", "whogitit-note"),
        c["humanonly"]: (None, None),
    }
    assert attributions(con) == sorted(
        [
            (
                c["gitai"],
                "cart.py",
                1,
                4,
                "claude-code",
                "claude",
                "opus",
                "uuid-1",
                "ai",
                "git-ai-note",
            ),
            (
                c["gitai"],
                "cart.py",
                9,
                12,
                "claude-code",
                "claude",
                "opus",
                "uuid-1",
                "ai",
                "git-ai-note",
            ),
            (c["legacy"], "pay.py", 2, 4, "cursor", "cursor", "gpt-5", "a1b2", "ai", "git-ai-note"),
            (c["both"], "tax.py", 1, 5, "cursor", "cursor", "gpt-5", "c9", "ai", "git-ai-note"),
            (
                c["whogitit"],
                "auth.py",
                1,
                2,
                "claude-code",
                "claude-code",
                "claude-opus-4-5-20251101",
                "7f3a4b2c-9d1e",
                "ai",
                "whogitit-note",
            ),
            (
                c["whogitit"],
                "auth.py",
                5,
                5,
                "claude-code",
                "claude-code",
                "claude-opus-4-5-20251101",
                "7f3a4b2c-9d1e",
                "ai",
                "whogitit-note",
            ),
            (
                c["whogitit"],
                "auth.py",
                4,
                4,
                "claude-code",
                "claude-code",
                "claude-opus-4-5-20251101",
                "7f3a4b2c-9d1e",
                "ai-modified",
                "whogitit-note",
            ),
        ]
    )
    rejected = con.execute("SELECT source, location, reason FROM rejected").fetchall()
    assert rejected == [
        (
            "ai-notes",
            f"refs/notes/ai:shop@{c['bad']}#attestation line 2",
            "want '<key> <ranges>' like 'abcd1234abcd1234 1-4,9', got "
            "'s_cccccccccccccc::t_dddddddddddddd 3-x'",
        )
    ]
    notes = con.execute("SELECT sha, status, agent, ai_lines FROM ai_notes ORDER BY sha").fetchall()
    assert sorted(notes) == sorted(
        [
            (c["gitai"], "ok", "claude-code", 8),
            (c["legacy"], "ok", "cursor", 3),
            (c["both"], "ok", "cursor", 5),
            (c["bad"], "rejected", None, 0),
            (c["humanonly"], "ok", None, 0),
            (c["whogitit"], "ok", "claude-code", 4),
        ]
    )


def test_reload_is_idempotent_and_follows_changed_and_removed_notes(
    repo: dict[str, str], tmp_path: Path
) -> None:
    con = connect(tmp_path / "ai.duckdb")
    load(con, repo["path"])
    before = (
        agents(con),
        attributions(con),
        con.execute("SELECT count(*) FROM rejected").fetchone(),
    )
    again = load(con, repo["path"])
    assert [(s.read, s.loaded, s.rejected) for s in again] == [(0, 0, 0), (0, 0, 0)]
    assert again[0].detail["notes_skipped"] == "tip unchanged since the last load"
    assert (
        agents(con),
        attributions(con),
        con.execute("SELECT count(*) FROM rejected").fetchone(),
    ) == before

    # the bad note is fixed, and the note beating the trailer is removed
    path = Path(repo["path"])
    add_note(
        path,
        "ai",
        repo["bad"],
        git_ai_note("stock.py", "s_cccccccccccccc::t_dddddddddddddd", "3", "codex", "gpt-5", "u"),
    )
    run_git(path, "notes", "--ref=ai", "remove", repo["both"])
    git_ai, whogitit = load(con, repo["path"])
    assert (git_ai.read, git_ai.loaded, git_ai.rejected, git_ai.already_present) == (4, 1, 0, 3)
    assert git_ai.detail["notes_removed"] == 1
    assert whogitit.read == 0
    now = agents(con)
    assert now[repo["bad"]] == ("codex", "git-ai-note")
    assert now[repo["both"]] == ("claude-code", "trailer")  # back to its trailer
    assert not [r for r in attributions(con) if r[0] == repo["both"]]
    assert [r[1:4] for r in attributions(con) if r[0] == repo["bad"]] == [("stock.py", 3, 3)]


def test_a_repository_without_notes_is_unchanged(repo: dict[str, str], tmp_path: Path) -> None:
    path = Path(repo["path"])
    for ref in ("ai", "whogitit"):
        run_git(path, "update-ref", "-d", f"refs/notes/{ref}")
    plain = connect(tmp_path / "plain.duckdb")
    load_git_history(plain, path)
    expected = {sha: agent for sha, (agent, _) in agents(plain).items()}
    con = connect(tmp_path / "ai.duckdb")
    assert load(con, repo["path"]) == []
    assert {sha: agent for sha, (agent, _) in agents(con).items()} == expected
    assert agents(con)[repo["trailer"]] == ("claude-code", "trailer")
    assert agents(con)[repo["gitai"]] == (None, None)
    assert con.execute("SELECT count(*) FROM ai_notes").fetchone() == (0,)
    assert con.execute("SELECT count(*) FROM loads WHERE source = 'ai-notes'").fetchone() == (0,)
    # a second pass changes nothing
    assert apply_agents(con, "shop") == 0


def test_agent_vs_human_counts_note_marked_commits(repo: dict[str, str], tmp_path: Path) -> None:
    db = tmp_path / "avh.duckdb"
    result = reflect("load", "git", repo["path"], "--szz", "--db", str(db), "--json")
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert [s["detail"]["ref"] for s in out["ai_notes"]] == ["refs/notes/ai", "refs/notes/whogitit"]
    params = load_preregistration().agent_vs_human
    con = duckdb.connect(str(db), read_only=True)
    try:
        records, _ = avh.read_history(con, "shop", params.time_column)
        analysed = avh.run_agent_vs_human(
            con, open_repo(repo["path"]), replace(params, min_group_commits=1), survival=False
        )
    finally:
        con.close()
    by_sha = {r.sha: r.agent for r in records}
    marked = {k for k in ("gitai", "legacy", "both", "trailer", "whogitit")}
    assert {sha for sha, agent in by_sha.items() if agent} == {repo[k] for k in marked}
    assert analysed.agent_commits_loaded == 5
    assert {f.sha: f.agent for f in analysed.fates}[repo["whogitit"]] == "claude-code"


def test_parse_the_spec_examples() -> None:
    parsed = parse_git_ai_note(SESSIONS_NOTE)
    assert not isinstance(parsed, NoteProblem)
    spans = [(r.path, r.start_line, r.end_line, r.agent) for r in parsed.ranges]
    assert spans == [
        ("src/main.rs", 1, 10, "cursor"),
        ("src/main.rs", 15, 20, "cursor"),
        ("src/main.rs", 25, 25, "cursor"),
        ("src/main.rs", 30, 35, "cursor"),
        ("src/lib.rs", 1, 50, "claude-code"),
    ]
    # cursor 10+6+1+6 = 23 lines, claude 50: the commit's agent is the one with most lines
    assert (parsed.agent, parsed.tool, parsed.ai_lines) == ("claude-code", "claude", 73)
    assert parsed.ranges[-1] == LineRange(
        "src/lib.rs", 1, 50, "claude-code", "claude", "claude-sonnet-4-5", "conv_abc123def456"
    )
    quoted = parse_git_ai_note(
        '"src/my file.rs"\n  abcd1234abcd1234 7\n  0000000000000000 9\n---\n'
        '{"schema_version": "authorship/3.0.0", "base_commit_sha": "x", '
        '"prompts": {"abcd1234abcd1234": {"agent_id": {"tool": "Windsurf"}}}}'
    )
    assert not isinstance(quoted, NoteProblem)
    assert [(r.path, r.agent, r.model) for r in quoted.ranges] == [
        ("src/my file.rs", "windsurf", None)
    ]
    assert quoted.unresolved_keys == 1  # a key with no prompt record: its lines left out
    v2 = parse_whogitit_note(whogitit_note("a.py", ["AI", "AI", "AI", "Human"], version=2))
    assert not isinstance(v2, NoteProblem)
    assert [(r.start_line, r.end_line, r.kind) for r in v2.ranges] == [(1, 3, "ai")]


def meta(**fields: object) -> str:
    """A metadata section (§1.2.4) with an empty ``prompts`` unless given."""
    return json.dumps({"schema_version": "authorship/3.0.0", "prompts": {}, **fields})


@pytest.mark.parametrize(
    ("note", "field", "reason"),
    [
        ("a.py\n  abcd 1\n", "#", "no divider line"),
        ("a.py\n  k 1\n---\n{", "#/metadata", "not JSON"),
        (
            'a.py\n  k 1\n---\n{"schema_version": "authorship/2.0.0", "prompts": {}}',
            "#/schema_version",
            "unsupported",
        ),
        (
            'a.py\n  k 1\n---\n{"schema_version": "authorship/3.0.0"}',
            "#/prompts",
            "requires a prompts",
        ),
        (
            '  k 1\n---\n{"schema_version": "authorship/3.0.0", "prompts": {}}',
            "#attestation line 1",
            "before any file",
        ),
        (
            'a.py\n   k 1\n---\n{"schema_version": "authorship/3.0.0", "prompts": {}}',
            "#attestation line 2",
            "two spaces",
        ),
        (
            'a.py\n  k 0-3\n---\n{"schema_version": "authorship/3.0.0", "prompts": {}}',
            "#attestation line 2",
            "<key> <ranges>",
        ),
        (
            'a.py\n  k 5-3\n---\n{"schema_version": "authorship/3.0.0", "prompts": {}}',
            "#attestation line 2",
            "<key> <ranges>",
        ),
        (
            "a.py\n  k 1\n---\n" + meta(prompts={"k": {"agent_id": {}}}),
            "#/prompts/k/agent_id/tool",
            "tool's name",
        ),
        (
            "a.py\n  s_1::t_2 1\n---\n" + meta(sessions={"s_1": {}}),
            "#/sessions/s_1/agent_id",
            "agent_id",
        ),
    ],
)
def test_malformed_git_ai_notes_name_the_field(note: str, field: str, reason: str) -> None:
    problem = parse_git_ai_note(note)
    assert isinstance(problem, NoteProblem)
    assert problem.field == field
    assert reason in problem.reason


@pytest.mark.parametrize(
    ("doc", "field"),
    [
        ("[", "#"),
        ({"version": 9}, "#/version"),
        ({"version": 3, "files": []}, "#/session"),
        (
            {
                "version": 3,
                "session": {},
                "files": [{"path": "a", "lines": [{"line_number": 0, "source": "AI"}]}],
            },
            "#/files/0/lines/0/line_number",
        ),
        (
            {"version": 3, "session": {}, "files": [{"path": "a", "lines": [{"line_number": 1}]}]},
            "#/files/0/lines/0/source",
        ),
    ],
)
def test_malformed_whogitit_notes_name_the_field(doc: object, field: str) -> None:
    problem = parse_whogitit_note(doc if isinstance(doc, str) else json.dumps(doc))
    assert isinstance(problem, NoteProblem)
    assert problem.field == field


def test_a_lone_surrogate_escape_in_a_path_makes_the_note_a_problem() -> None:
    """``"caf\\udce9.py"`` is valid JSON but no text: its lines could not be stored, so the
    note is rejected with the reason (it stopped the load at the insert)."""
    text = whogitit_note("caf\udce9.py", ["AI", "AI"])
    assert "\\udce9" in text  # json.dumps escaped it: the note is ASCII
    problem = parse_note("whogitit-note", text.encode())
    assert isinstance(problem, NoteProblem)
    assert "lone surrogate" in problem.reason
    fine = parse_note("whogitit-note", whogitit_note("caf\u00e9.py", ["AI", "AI"]).encode())
    assert isinstance(fine, NoteAttribution) and fine.ranges[0].path == "caf\u00e9.py"
