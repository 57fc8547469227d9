"""``commits.agent``: the pattern table (load/git/agents.py) and how git loads fill the column.

The pattern cases are commit texts as the tools write them (docs/git.md, "Agent marks", gives
each source); the load tests use real git repositories built here, a database made before the
column existed, and the sqlite-utils bundle in ../shared/.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import duckdb
import pytest

from agent_reflection.load.git import agents
from agent_reflection.load.git.agents import (
    AGENT_PATTERNS,
    AGENT_PATTERNS_VERSION,
    AGENTS,
    commit_agent,
    match_agent,
)
from agent_reflection.load.git.history import load_git_history
from agent_reflection.store.db import connect
from conftest import run_git

HUMAN = "Ada Lovelace <ada@example.com>"

# (subject, body, author, committer, expected agent, expected pattern)
MARKED = [
    ("Add x", "", "Claude <noreply@anthropic.com>", HUMAN, "claude-code", "claude-identity"),
    # issue 32: an author named Claude with another address was counted as human, and
    # anthropic-code-agent[bot] (a Copilot-style address) was tagged copilot
    ("Add x", "", "Claude <claude@example.com>", HUMAN, "claude-code", "claude-name-identity"),
    (
        "Add x",
        "",
        "anthropic-code-agent[bot] <242468646+Copilot@users.noreply.github.com>",
        HUMAN,
        "claude-code",
        "anthropic-agent-identity",
    ),
    (
        "Add x",
        "",
        HUMAN,
        "acme-agent[bot] <1+acme-agent[bot]@users.noreply.github.com>",
        "other-agent",
        "agent-bot-identity",
    ),
    (
        "Add x",
        "",
        "claude[bot] <209825114+claude[bot]@users.noreply.github.com>",
        HUMAN,
        "claude-code",
        "claude-bot-identity",
    ),
    (
        "Add x",
        "Body.\n\nCo-Authored-By: Claude <noreply@anthropic.com>",
        HUMAN,
        HUMAN,
        "claude-code",
        "claude-co-author",
    ),
    (
        "Add x",
        "Co-authored-by: Claude Opus 4.5 <noreply@anthropic.com>",
        HUMAN,
        HUMAN,
        "claude-code",
        "claude-co-author",
    ),
    (
        "Add x",
        "co-authored-by: Claude Opus 4.8 (1M context) <noreply@anthropic.com>",
        HUMAN,
        HUMAN,
        "claude-code",
        "claude-co-author",
    ),
    (
        "Add x",
        "🤖 Generated with [Claude Code](https://claude.com/claude-code)",
        HUMAN,
        HUMAN,
        "claude-code",
        "claude-generated-with",
    ),
    (
        "Add x",
        "Claude-Session: https://claude.ai/code/session_01UnLnhsH25Nnv7LHhekUfPd",
        HUMAN,
        HUMAN,
        "claude-code",
        "claude-session",
    ),
    (
        "Run ty",
        "",
        "copilot-swe-agent[bot] <198982749+Copilot@users.noreply.github.com>",
        "GitHub <noreply@github.com>",
        "copilot",
        "copilot-identity",
    ),
    (
        "Remove x (#685)",
        "",
        "Copilot <198982749+Copilot@users.noreply.github.com>",
        "GitHub <noreply@github.com>",
        "copilot",
        "copilot-identity",
    ),
    (
        "Add x",
        "Co-authored-by: Copilot <175728472+Copilot@users.noreply.github.com>",
        HUMAN,
        HUMAN,
        "copilot",
        "copilot-co-author",
    ),
    (
        "Add x",
        "Co-authored-by: copilot-swe-agent[bot] <198982749+Copilot@users.noreply.github.com>",
        HUMAN,
        HUMAN,
        "copilot",
        "copilot-co-author",
    ),
    (
        "Add x",
        "Agent-Logs-Url: https://github.com/o/r/sessions/ce063abd-6f45",
        HUMAN,
        HUMAN,
        "copilot",
        "copilot-agent-logs",
    ),
    (
        "Add x",
        "",
        "chatgpt-codex-connector[bot] <199175422+chatgpt-codex-connector[bot]@users"
        ".noreply.github.com>",
        HUMAN,
        "codex",
        "codex-identity",
    ),
    (
        "Add x",
        "Co-authored-by: Codex <noreply@openai.com>",
        HUMAN,
        HUMAN,
        "codex",
        "codex-co-author",
    ),
    (
        "Add x",
        "Co-Authored-By: OpenAI Codex <codex@openai.com>",
        HUMAN,
        HUMAN,
        "codex",
        "codex-co-author",
    ),
    (
        "Add x",
        "Generated with [Codex](https://openai.com/codex)",
        HUMAN,
        HUMAN,
        "codex",
        "codex-generated-with",
    ),
    ("Add x", "", "Cursor Agent <cursoragent@cursor.com>", HUMAN, "cursor", "cursor-identity"),
    (
        "Add x",
        "Co-authored-by: Cursor <cursoragent@cursor.com>",
        HUMAN,
        HUMAN,
        "cursor",
        "cursor-co-author",
    ),
    (
        "Add x",
        "Co-authored-by: Cursor Agent <cursoragent@cursor.com>",
        HUMAN,
        HUMAN,
        "cursor",
        "cursor-co-author",
    ),
    ("Add x", "Made-with: Cursor", HUMAN, HUMAN, "cursor", "cursor-made-with"),
    (
        "Add x",
        "",
        "devin-ai-integration[bot] <158243242+devin-ai-integration[bot]@users.noreply.github.com>",
        HUMAN,
        "devin",
        "devin-identity",
    ),
    (
        "Add x",
        "Co-Authored-By: Devin <158243242+devin-ai-integration[bot]@users.noreply.github.com>",
        HUMAN,
        HUMAN,
        "devin",
        "devin-co-author",
    ),
    (
        "Add x",
        "Generated with [Devin](https://devin.ai)",
        HUMAN,
        HUMAN,
        "devin",
        "devin-generated-with",
    ),
    ("Add x", "", "Ada Lovelace (aider) <ada@example.com>", HUMAN, "aider", "aider-identity"),
    ("Add x", "", HUMAN, "Ada Lovelace (aider) <ada@example.com>", "aider", "aider-identity"),
    (
        "Add x",
        "Co-authored-by: aider (gpt-4o) <noreply@aider.chat>",
        HUMAN,
        HUMAN,
        "aider",
        "aider-co-author",
    ),
    ("aider: Added a parameter to foo", "", HUMAN, HUMAN, "aider", "aider-subject"),
    (
        "Add x",
        "",
        "google-labs-jules[bot] <161369871+google-labs-jules[bot]@users.noreply.github.com>",
        HUMAN,
        "jules",
        "jules-identity",
    ),
    (
        "Add x",
        "Co-authored-by: google-labs-jules[bot] <161369871+google-labs-jules[bot]@users"
        ".noreply.github.com>",
        HUMAN,
        HUMAN,
        "jules",
        "jules-co-author",
    ),
    (
        "Add x",
        "Co-authored-by: openhands <openhands@all-hands.dev>",
        HUMAN,
        HUMAN,
        "openhands",
        "openhands-co-author",
    ),
    ("Add x", "Co-authored-by: Amp <amp@ampcode.com>", HUMAN, HUMAN, "amp", "amp-co-author"),
    (
        "Add x",
        "Co-authored-by: opencode <noreply@opencode.ai>",
        HUMAN,
        HUMAN,
        "opencode",
        "opencode-co-author",
    ),
]


@pytest.mark.parametrize(("subject", "body", "author", "committer", "agent", "pattern"), MARKED)
def test_each_documented_mark_is_matched(
    subject: str, body: str, author: str, committer: str, agent: str, pattern: str
) -> None:
    found = match_agent(subject, body, author, committer)
    assert found is not None
    assert (found.agent, found.pattern) == (agent, pattern)


UNMARKED = [
    # a person called Claude, Devin or Cursor is not an agent
    ("Fix y", "", "Claude Monet <claude@example.com>", HUMAN),
    ("Fix y", "Co-authored-by: Claude Shannon <shannon@example.com>", HUMAN, HUMAN),
    ("Fix y", "Co-authored-by: Devin Smith <devin@example.com>", HUMAN, HUMAN),
    # words in prose, not trailers
    ("Fix the cursor position in the CLI", "make the cursor invisible", HUMAN, HUMAN),
    ("Document how Claude Code and Copilot sign commits", "We use aider: sometimes.", HUMAN, HUMAN),
    ("Use codex-style naming", "see the copilot docs", HUMAN, HUMAN),
    # a co-author trailer of a person at GitHub
    ("Fix y", "Co-authored-by: simonw <9599+simonw@users.noreply.github.com>", HUMAN, HUMAN),
    ("Merge pull request #3 from o/aider-fixes", "", HUMAN, "GitHub <noreply@github.com>"),
]


@pytest.mark.parametrize(("subject", "body", "author", "committer"), UNMARKED)
def test_unmarked_commits_have_no_agent(
    subject: str, body: str, author: str, committer: str
) -> None:
    assert match_agent(subject, body, author, committer) is None


def test_first_match_wins_identity_before_trailer() -> None:
    # Claude Code on the web commits as Claude and also writes the session trailer; a human
    # commit with a Cursor trailer and a Claude footer is credited to the first row that matches
    found = match_agent(
        "Add x",
        "Claude-Session: https://claude.ai/code/session_1",
        "Claude <noreply@anthropic.com>",
        HUMAN,
    )
    assert found is not None and found.pattern == "claude-identity"
    both = match_agent(
        "Add x",
        "Made-with: Cursor\n\n🤖 Generated with [Claude Code](https://claude.ai/code)",
        HUMAN,
        HUMAN,
    )
    assert both is not None and both.agent == "claude-code"  # claude rows come before cursor's
    order = [row.name for row in AGENT_PATTERNS]
    assert order.index("claude-generated-with") < order.index("cursor-made-with")


def test_pattern_table_is_well_formed() -> None:
    names = [row.name for row in AGENT_PATTERNS]
    assert len(names) == len(set(names))
    assert {row.agent for row in AGENT_PATTERNS} == set(AGENTS)
    wheres = [row.where for row in AGENT_PATTERNS]
    # identities, then trailers, then subjects (the documented order)
    assert wheres == sorted(wheres, key=["identity", "trailer", "subject"].index)
    # every row is exercised by a documented case above
    assert {case[5] for case in MARKED} == set(names)


def test_the_guard_never_hides_a_match() -> None:
    # every documented mark contains a guard word, so the guard cannot skip it
    for subject, body, author, committer, agent, _ in MARKED:
        text = f"{subject}\n{body}\n{author}\n{committer}".lower()
        assert any(word in text for word in agents.GUARD_WORDS), agent


def test_commit_agent_tolerates_missing_identity_parts() -> None:
    assert commit_agent("Add x", "", "Claude", "noreply@anthropic.com", None, None) == (
        "claude-code"
    )
    assert commit_agent("Add x", "", None, None, None, None) is None


# ------------------------------------------------------------------ loads fill the column


def commit_as(
    repo: Path, name: str, message: str, author: str = "Test Author <a@example.com>"
) -> str:
    (repo / name).write_text(message + "\n")
    run_git(repo, "add", name)
    author_name, _, email = author.partition(" <")
    env = {"GIT_AUTHOR_NAME": author_name, "GIT_AUTHOR_EMAIL": email.rstrip(">")}
    run_git(repo, "commit", "-q", "-m", message, env=env)
    return run_git(repo, "rev-parse", "HEAD").strip()


def agents_by_sha(con: duckdb.DuckDBPyConnection) -> dict[str, tuple[str | None, int | None]]:
    rows = con.execute("SELECT sha, agent, agent_version FROM commits").fetchall()
    return {sha: (agent, version) for sha, agent, version in rows}


def test_load_fills_agent_and_incremental_load_fills_new_commits(
    git_repo: Path, tmp_path: Path
) -> None:
    con = connect(tmp_path / "a.duckdb")
    trailer = commit_as(git_repo, "a", "Add a\n\nCo-Authored-By: Claude <noreply@anthropic.com>")
    bot = commit_as(git_repo, "b", "Add b", "Claude <noreply@anthropic.com>")
    human = commit_as(git_repo, "c", "Fix the cursor")
    load_git_history(con, git_repo)
    got = agents_by_sha(con)
    assert got[trailer] == ("claude-code", AGENT_PATTERNS_VERSION)
    assert got[bot] == ("claude-code", AGENT_PATTERNS_VERSION)
    assert got[human] == (None, AGENT_PATTERNS_VERSION)
    aider = commit_as(git_repo, "d", "aider: add d")
    summary = load_git_history(con, git_repo)
    assert summary.loaded == 1  # incremental: only the new commit is listed
    assert agents_by_sha(con)[aider] == ("aider", AGENT_PATTERNS_VERSION)


def test_database_made_before_the_column_is_filled_by_the_next_load(
    git_repo: Path, tmp_path: Path
) -> None:
    """An old database: the columns do not exist. Reconnecting adds them, and the next load,
    which lists no new commit (every tip is recorded), fills them for the old rows."""
    db = tmp_path / "old.duckdb"
    marked = commit_as(git_repo, "a", "Add a\n\nCo-authored-by: Cursor <cursoragent@cursor.com>")
    con = connect(db)
    load_git_history(con, git_repo)
    con.execute("ALTER TABLE commits DROP COLUMN agent")
    con.execute("ALTER TABLE commits DROP COLUMN agent_version")
    con.close()
    con = connect(db)  # the schema's ALTER TABLE adds the columns back, empty
    assert set(agents_by_sha(con).values()) == {(None, None)}
    summary = load_git_history(con, git_repo)
    assert (summary.read, summary.loaded) == (0, 0)
    got = agents_by_sha(con)
    assert got[marked] == ("cursor", AGENT_PATTERNS_VERSION)
    assert {v for sha, v in got.items() if sha != marked} == {(None, AGENT_PATTERNS_VERSION)}


def test_rows_of_an_older_pattern_version_are_matched_again(git_repo: Path, tmp_path: Path) -> None:
    con = connect(tmp_path / "v.duckdb")
    marked = commit_as(git_repo, "a", "Add a", "Cursor Agent <cursoragent@cursor.com>")
    load_git_history(con, git_repo)
    # as an older table would have left it: another answer, an older version
    con.execute("UPDATE commits SET agent = 'devin', agent_version = 0")
    untouched_repo = agents_by_sha(con)
    assert untouched_repo[marked] == ("devin", 0)
    load_git_history(con, git_repo)
    got = agents_by_sha(con)
    assert got[marked] == ("cursor", AGENT_PATTERNS_VERSION)
    assert {v for sha, v in got.items() if sha != marked} == {(None, AGENT_PATTERNS_VERSION)}


def test_arrow_batches_fill_the_column_like_small_batches(git_repo: Path, tmp_path: Path) -> None:
    """A batch of a few hundred rows (history._insert): the agent column comes through."""
    for i in range(220):
        (git_repo / f"f{i}").write_text(f"{i}\n")
    run_git(git_repo, "add", ".")
    run_git(git_repo, "commit", "-q", "-m", "Add many files\n\nMade-with: Cursor")
    for i in range(5):
        commit_as(git_repo, f"g{i}", f"Add g{i}", "Claude <noreply@anthropic.com>")
    con = connect(tmp_path / "arrow.duckdb")
    load_git_history(con, git_repo)
    counts = dict(
        con.execute("SELECT coalesce(agent, '-'), count(*) FROM commits GROUP BY 1").fetchall()
    )
    assert counts == {"cursor": 1, "claude-code": 5, "-": 1}


@pytest.mark.slow
def test_sqlite_utils_agent_counts(shared_dir: Path, tmp_path: Path) -> None:
    """The counts docs/git.md reports, measured on the real history; each is checked against
    git's own trailer parsing (an independent reading of the same commits)."""
    bundle = shared_dir / "data/git/sqlite-utils.bundle"
    con = connect(tmp_path / "su.duckdb")
    load_git_history(con, bundle, cache_dir=tmp_path / "cache")
    counts = dict(
        con.execute(
            "SELECT coalesce(agent, '-'), count(*) FROM commits WHERE repo = 'sqlite-utils' "
            "GROUP BY 1"
        ).fetchall()
    )
    clone = tmp_path / "clone"
    subprocess.run(
        ["git", "clone", "-q", "--mirror", str(bundle), str(clone)], check=True, capture_output=True
    )
    log = subprocess.run(
        [
            "git",
            "-C",
            str(clone),
            "log",
            "--branches",
            "--tags",
            "--remotes",
            "-z",
            "--format=%H%x00%an <%ae>%x00%(trailers:key=Co-authored-by,valueonly,separator=%x01)",
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split("\0")
    by_git: dict[str, set[str]] = {"claude": set(), "copilot": set()}
    for i in range(0, len(log) - 2, 3):
        sha, author, co_authors = log[i].strip(), log[i + 1], log[i + 2].lower()
        if author.startswith("Claude <noreply@anthropic.com>") or "noreply@anthropic.com" in (
            co_authors
        ):
            by_git["claude"].add(sha)
        if "copilot" in author.lower():
            by_git["copilot"].add(sha)
    # git's trailer reading finds the same Claude commits except Claude-Session-only ones
    session_only = {
        row[0]
        for row in con.execute(
            "SELECT sha FROM commits WHERE agent = 'claude-code' AND body LIKE '%Claude-Session:%'"
            " AND body NOT ILIKE '%noreply@anthropic.com%' AND author_email <> "
            "'noreply@anthropic.com'"
        ).fetchall()
    }
    claude = {
        r[0] for r in con.execute("SELECT sha FROM commits WHERE agent = 'claude-code'").fetchall()
    }
    assert claude - session_only == by_git["claude"]
    assert counts == {"claude-code": 106, "copilot": 2, "-": 1382}
    assert len(session_only) == 1
