"""Which coding agent, if any, a commit says made it: the pattern table behind ``commits.agent``.

A commit carries no field for "made by an agent"; the tools mark their commits in one of three
ways, and each way is a row of :data:`AGENT_PATTERNS`:

- ``identity``: the commit's author or committer is the agent's own account (Claude Code on the
  web commits as ``Claude <noreply@anthropic.com>``, GitHub's Copilot coding agent as
  ``copilot-swe-agent[bot]``, Cursor's background agent as ``Cursor Agent``, Aider appends
  ``(aider)`` to the user's name);
- ``trailer``: a line of the message names the agent as co-author or the session it came from
  (``Co-Authored-By: Claude Opus 4.5 <noreply@anthropic.com>``, ``Claude-Session: ...``,
  ``Co-authored-by: Cursor <cursoragent@cursor.com>``, ``Made-with: Cursor``);
- ``subject``: the subject line starts with the agent's tag (Aider's ``aider: `` prefix).

The rows are tried in order and the first match wins: identities first (the account that made
the commit is the strongest evidence), then trailers, then subjects. A commit no row matches has
``agent`` NULL: no agent mark, which is not proof that no agent helped (a tool may be set not to
sign its commits, and OpenAI's Codex cloud commits as the user without a trailer). docs/git.md
lists every row with its source and what was checked on real history.

Bump :data:`AGENT_PATTERNS_VERSION` whenever a row changes: ``commits.agent_version`` records
the version each row was matched with, and every git load re-matches the rows of an older
version (:func:`refresh_agents`), also when it lists no new commit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from agent_reflection.store.db import read_sql, transaction

if TYPE_CHECKING:
    import duckdb

#: Version of :data:`AGENT_PATTERNS` (stored in ``commits.agent_version``).
AGENT_PATTERNS_VERSION = 2

#: Where a pattern looks: the author or committer as ``Name <email>``, any line of the message
#: (subject and body; matched with ``re.MULTILINE``), or the subject line alone.
Where = Literal["identity", "trailer", "subject"]

#: The names stored in ``commits.agent``.
AGENTS = (
    "claude-code",
    "copilot",
    "codex",
    "cursor",
    "devin",
    "aider",
    "jules",
    "openhands",
    "amp",
    "opencode",
    "other-agent",
)


@dataclass(frozen=True)
class AgentPattern:
    """One row of the table: ``agent`` when ``pattern`` matches at ``where``."""

    name: str  # unique, says what is matched (reported by :func:`match_agent`)
    agent: str  # one of AGENTS
    where: Where
    pattern: re.Pattern[str]


def _p(name: str, agent: str, where: Where, regex: str) -> AgentPattern:
    flags = re.IGNORECASE | (re.MULTILINE if where == "trailer" else 0)
    return AgentPattern(name, agent, where, re.compile(regex, flags))


#: ``Co-authored-by:`` at the start of a line, any capitalisation (git and GitHub accept any).
_CO = r"^[ \t]*co-authored-by:[ \t]*"

#: The ordered pattern table (first match wins). Sources and checks: docs/git.md, "Agent marks".
AGENT_PATTERNS: tuple[AgentPattern, ...] = (
    # --- identities: the account that made the commit
    # Claude Code on the web (and its GitHub app) commits as "Claude <noreply@anthropic.com>"
    _p("claude-identity", "claude-code", "identity", r"^claude\b[^<]*<noreply@anthropic\.com>$"),
    # the Claude GitHub app / Action: claude[bot], account id 209825114
    _p("claude-bot-identity", "claude-code", "identity", r"\bclaude\[bot\]"),
    # Anthropic's coding agent on GitHub commits as anthropic-code-agent[bot] with a
    # Copilot-style noreply address: before the copilot row, which would take it (issue 32)
    _p("anthropic-agent-identity", "claude-code", "identity", r"\banthropic-code-agent\[bot\]"),
    # an author or committer named just "Claude", whatever the address (issue 32: such
    # commits were counted as human)
    _p("claude-name-identity", "claude-code", "identity", r"^claude\s*<"),
    # GitHub Copilot coding agent: copilot-swe-agent[bot] or Copilot <NNN+Copilot@users.noreply...>
    _p(
        "copilot-identity",
        "copilot",
        "identity",
        r"copilot-swe-agent\[bot\]|<\d+\+copilot@users\.noreply\.github\.com>$",
    ),
    # OpenAI Codex's GitHub connector
    _p("codex-identity", "codex", "identity", r"chatgpt-codex-connector\[bot\]"),
    # Cursor's background agent commits as "Cursor Agent <cursoragent@cursor.com>"
    _p("cursor-identity", "cursor", "identity", r"<cursoragent@cursor\.com>$"),
    # Devin: devin-ai-integration[bot], account id 158243242
    _p("devin-identity", "devin", "identity", r"devin-ai-integration"),
    # Google's Jules: google-labs-jules[bot]
    _p("jules-identity", "jules", "identity", r"google-labs-jules"),
    # Aider (--attribute-author / --attribute-committer, on by default): "Name (aider)"
    _p("aider-identity", "aider", "identity", r"^[^<]*\(aider\)\s*<"),
    # any other coding agent's GitHub app account: "<name>-agent[bot]" (last identity row)
    _p("agent-bot-identity", "other-agent", "identity", r"[\w.-]+-agent\[bot\]"),
    # --- trailers: a line of the message names the agent
    # Claude Code's default attribution: Co-Authored-By: Claude[ <model>] <noreply@anthropic.com>
    _p(
        "claude-co-author",
        "claude-code",
        "trailer",
        _CO + r"claude\b[^<\n]*<noreply@anthropic\.com>",
    ),
    # Claude Code's older footer: "Generated with [Claude Code](https://claude.ai/code)"
    _p("claude-generated-with", "claude-code", "trailer", r"generated with \[?claude code\b"),
    # Claude Code's session link: "Claude-Session: https://claude.ai/code/session_..."
    _p(
        "claude-session",
        "claude-code",
        "trailer",
        r"^[ \t]*claude-session:[ \t]*https://claude\.ai/",
    ),
    _p(
        "copilot-co-author",
        "copilot",
        "trailer",
        _CO
        + r"(?:github[ \t]+)?copilot\b[^<\n]*<[^>\n]*copilot[^>\n]*>|"
        + _CO
        + r"copilot-swe-agent",
    ),
    # Copilot coding agent's link to its session log
    _p(
        "copilot-agent-logs",
        "copilot",
        "trailer",
        r"^[ \t]*agent-logs-url:[ \t]*https://github\.com/[^\s]+/sessions/",
    ),
    _p("codex-co-author", "codex", "trailer", _CO + r"(?:openai[ \t]+)?codex\b[^<\n]*<"),
    _p("codex-generated-with", "codex", "trailer", r"generated with \[?(?:openai )?codex\b"),
    _p(
        "cursor-co-author",
        "cursor",
        "trailer",
        _CO + r"cursor\b[^<\n]*<[^>\n]*@cursor\.(?:com|sh)>",
    ),
    _p("cursor-made-with", "cursor", "trailer", r"^[ \t]*made-with:[ \t]*cursor\b"),
    _p("devin-co-author", "devin", "trailer", _CO + r"devin\b[^<\n]*<[^>\n]*devin-ai-integration"),
    _p("devin-generated-with", "devin", "trailer", r"generated with \[?devin\b"),
    _p("aider-co-author", "aider", "trailer", _CO + r"aider\b[^<\n]*<noreply@aider\.chat>"),
    _p("jules-co-author", "jules", "trailer", _CO + r"[^<\n]*<[^>\n]*google-labs-jules"),
    _p("openhands-co-author", "openhands", "trailer", _CO + r"[^<\n]*<openhands@all-hands\.dev>"),
    _p("amp-co-author", "amp", "trailer", _CO + r"[^<\n]*<amp@ampcode\.com>"),
    _p("opencode-co-author", "opencode", "trailer", _CO + r"[^<\n]*<noreply@opencode\.ai>"),
    # --- subjects
    # Aider's --attribute-commit-message-author prefix
    _p("aider-subject", "aider", "subject", r"^aider:[ \t]"),
)

#: A commit none of whose texts contains one of these words (lower case) cannot match any
#: row: checked first, so a load pays a few substring scans per commit for the common, unmarked
#: case (about 13 µs a commit against 70 µs for one case-insensitive regex).
GUARD_WORDS = (
    "claude",
    "anthropic",
    "copilot",
    "codex",
    "cursor",
    "devin",
    "aider",
    "jules",
    "all-hands",
    "ampcode",
    "opencode",
    "agent-logs",
    "-agent[bot]",
)


@dataclass(frozen=True)
class AgentMatch:
    """The agent a commit names and the row of :data:`AGENT_PATTERNS` that said so."""

    agent: str
    pattern: str


def match_agent(
    subject: str,
    body: str,
    author: str,
    committer: str,
) -> AgentMatch | None:
    """The first row of :data:`AGENT_PATTERNS` that matches this commit, or None.

    ``author`` and ``committer`` are identities as ``Name <email>`` (:func:`identity`).
    """
    lowered = f"{author}\n{committer}\n{subject}\n{body}".lower()
    if not any(word in lowered for word in GUARD_WORDS):
        return None
    message = f"{subject}\n\n{body}"
    for row in AGENT_PATTERNS:
        if row.where == "identity":
            hit = row.pattern.search(author) or row.pattern.search(committer)
        elif row.where == "trailer":
            hit = row.pattern.search(message)
        else:
            hit = row.pattern.search(subject.lstrip())
        if hit:
            return AgentMatch(row.agent, row.name)
    return None


def identity_agent(author: str, committer: str) -> str | None:
    """The agent whose own account the author or committer is (the ``identity`` rows only),
    or None: a bot account that is not an agent's is a bot (:mod:`.kinds`)."""
    for row in AGENT_PATTERNS:
        if row.where == "identity" and (
            row.pattern.search(author) or row.pattern.search(committer)
        ):
            return row.agent
    return None


def identity(name: str | None, email: str | None) -> str:
    """``Name <email>`` as git prints it (``%an <%ae>``); missing parts are empty."""
    return f"{name or ''} <{email or ''}>"


def commit_agent(
    subject: str,
    body: str,
    author_name: str | None,
    author_email: str | None,
    committer_name: str | None,
    committer_email: str | None,
) -> str | None:
    """The ``commits.agent`` value of a commit (None: no agent mark)."""
    found = match_agent(
        subject,
        body,
        identity(author_name, author_email),
        identity(committer_name, committer_email),
    )
    return found.agent if found is not None else None


def refresh_agents(con: duckdb.DuckDBPyConnection, repo: str) -> int:
    """Match again the commits of ``repo`` stored by an older pattern table (or before the
    ``agent`` column existed); returns how many rows were updated. Rows already matched by
    :data:`AGENT_PATTERNS_VERSION` are not read."""
    stale = con.execute(
        read_sql("git/agents_stale.sql"), {"repo": repo, "version": AGENT_PATTERNS_VERSION}
    ).fetchall()
    if not stale:
        return 0
    shas = [row[0] for row in stale]
    agents = [commit_agent(*row[1:]) for row in stale]
    with transaction(con):
        con.execute(
            read_sql("git/agents_update.sql"),
            {"repo": repo, "shas": shas, "agents": agents, "version": AGENT_PATTERNS_VERSION},
        )
    return len(stale)
