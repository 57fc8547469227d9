"""What kind of commit a commit is, whoever wrote its diff: a bot's, a dependency bump, a release.

One home for both readers of git history that must leave such commits out: P2's signal hygiene
(a ``fix(deps)`` bump or a "vX.Y.Z Fixes #N" release is not a repair of earlier work) and the
agent-vs-human comparison (renovate's lock-file churn is neither an agent's nor a human's
work). Which coding *agent* made a commit is :mod:`.agents`' table (``commits.agent``); a
commit an agent made can still be a release or a bump, and is then classified as one.

The rules, tried in order (the first that holds names the kind):

- **bot**: the author or committer identity matches ``bot_identity`` (``dependabot[bot]``,
  ``renovate[bot]``, ``pre-commit-ci[bot]``, ``github-actions``...) and is not a coding agent's
  (``copilot-swe-agent[bot]`` is an agent); or a message line matches ``bot_message`` (the
  ``[pre-commit.ci]`` subject, a bot's ``Signed-off-by`` trailer);
- **dependency-bump**: the conventional-commit scope is one of ``bump_scopes`` (``deps``,
  ``deps-dev``); or the subject matches ``bump_message`` ("Bump x from 1.2 to 1.3", "Bump the
  github-actions group", "Update dependency x", "pre-commit autoupdate"); or every changed
  file is a lockfile; or every changed file is a lockfile or a manifest and every changed code
  line only sets a version string (when that is known);
- **release**: the conventional type or scope is ``release``, or the subject matches
  ``release_message`` ("Release 4.2", "release version 3.1.3", "v1.2.3 Fixes #12",
  "Bump version to 2.0").

Pure: :func:`classify_commit` takes the commit's fields; the patterns are registered
(``[p2]`` of the pre-registration, defaults :data:`DEFAULT_RULES`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from agent_reflection.experiments.p2.paths import matching_glob

BOT = "bot"
DEPENDENCY_BUMP = "dependency-bump"
RELEASE = "release"
#: the kinds that are nobody's work on the code: left out of P2's signals and of both groups
#: of agent-vs-human
KINDS = (BOT, DEPENDENCY_BUMP, RELEASE)


@dataclass(frozen=True)
class KindRules:
    """The patterns of the rules (module docstring); each is registered in ``[p2]``."""

    bot_identity: str
    bot_message: str
    bump_scopes: tuple[str, ...]
    bump_message: str
    lockfile_paths: tuple[str, ...]
    manifest_paths: tuple[str, ...]
    release_message: str


DEFAULT_RULES = KindRules(
    bot_identity=r"\[bot\]|^(dependabot|renovate|greenkeeper|snyk-bot|pre-commit-ci|"
    r"github-actions|imgbot|imgbotapp|mergify|allcontributors|semantic-release-bot|"
    r"pyup-bot|whitesource)\b",
    bot_message=r"^\[(pre-commit\.ci|imgbot|bot|dependabot|renovate)\]|"
    r"^(signed-off-by|co-authored-by):[^\n]*(dependabot|renovate|pre-commit-ci)\[bot\]",
    bump_scopes=("deps", "deps-dev", "dev-deps", "dependencies"),
    bump_message=r"^(\[security\]\s*)?(\w+(\([^)]*\))?!?:\s*)?(bump|update|upgrade)\s+\S+"
    r"(\s+\S+)?\s+from\s+\S+\s+to\s+\S+|^(\w+(\([^)]*\))?:\s*)?bump the \S+ group|"
    r"^(\w+(\([^)]*\))?:\s*)?update dependency\b|pre-commit autoupdate",
    lockfile_paths=(
        "package-lock.json",
        "yarn.lock",
        "pnpm-lock.yaml",
        "poetry.lock",
        "uv.lock",
        "pdm.lock",
        "pipfile.lock",
        "cargo.lock",
        "go.sum",
        "gemfile.lock",
        "composer.lock",
        "bun.lockb",
    ),
    manifest_paths=(
        "package.json",
        "pyproject.toml",
        "setup.cfg",
        "setup.py",
        "cargo.toml",
        "go.mod",
        "gemfile",
        "composer.json",
        "requirements*.txt",
        "requirements*.in",
        "constraints*.txt",
        ".pre-commit-config.yaml",
        ".github/workflows/*",
    ),
    release_message=r"^(\w+(\(release\))?:\s*)?(release|releasing|prepare(d)? (for )?release|"
    r"bump(ed)? (the )?version|version bump|bump to v?\d)\b|^v?\d+\.\d+(\.\d+)*"
    r"([a-z]+\d*)?(\s*$|:|\s+(fixes|closes|resolves)\b)",
)


@dataclass(frozen=True)
class CommitKind:
    """A commit's kind (one of :data:`KINDS`) and the rule that said so, or no kind."""

    kind: str | None
    rule: str | None
    why: str


def classify_commit(
    rules: KindRules,
    *,
    author: str,
    committer: str,
    subject: str,
    body: str = "",
    cc_type: str | None = None,
    cc_scope: str | None = None,
    paths: Sequence[str] = (),
    version_only: bool | None = None,
    agent_identity: bool = False,
) -> CommitKind:
    """The kind of one commit (module docstring). ``author`` / ``committer``: ``Name <email>``;
    ``version_only``: every changed code line only sets a version string (None: unknown);
    ``agent_identity``: the author or committer is a coding agent's account (not a bot)."""
    flags = re.IGNORECASE | re.MULTILINE
    if not agent_identity:
        for who, identity in (("author", author), ("committer", committer)):
            if identity and re.search(rules.bot_identity, identity, re.IGNORECASE):
                return CommitKind(BOT, "bot-identity", f"{who} {identity!r} is a bot")
    message = f"{subject}\n{body}"
    mark = re.search(rules.bot_message, message, flags)
    if mark is not None:
        return CommitKind(BOT, "bot-message", f"message says {mark.group(0).strip()!r}")
    scope = (cc_scope or "").lower()
    if scope and scope in rules.bump_scopes:
        return CommitKind(DEPENDENCY_BUMP, "deps-scope", f"conventional scope ({scope})")
    bump = re.search(rules.bump_message, subject, re.IGNORECASE)
    if bump is not None:
        return CommitKind(DEPENDENCY_BUMP, "bump-message", f"subject says {bump.group(0)!r}")
    if paths:
        locks = [p for p in paths if matching_glob(p, rules.lockfile_paths)]
        if len(locks) == len(paths):
            return CommitKind(
                DEPENDENCY_BUMP, "lockfile-only", f"changes only lockfiles ({', '.join(locks[:3])})"
            )
        manifests = [p for p in paths if matching_glob(p, rules.manifest_paths)]
        if version_only and len(locks) + len(manifests) == len(paths):
            return CommitKind(
                DEPENDENCY_BUMP,
                "manifest-version-only",
                "changes only manifests and lockfiles, each code line only a version",
            )
    if (cc_type or "").lower() == "release" or scope == "release":
        return CommitKind(RELEASE, "release-type", f"conventional {cc_type or scope}")
    release = re.search(rules.release_message, subject, re.IGNORECASE)
    if release is not None:
        return CommitKind(RELEASE, "release-message", f"subject says {release.group(0).strip()!r}")
    return CommitKind(None, None, "")


#: What a change is, for comparing like with like: the conventional type when the subject has
#: one, else from the files it touches (docs only, tests only, else code).
DOCS_PATHS = ("docs", "doc", "*.md", "*.rst", "*.txt", "changelog*", "changes*")
TEST_PATHS = ("tests", "test", "test_*.py", "*_test.py", "*_test.go", "*.test.*", "*.spec.*")


def change_kind(cc_type: str | None, paths: Sequence[str]) -> str:
    """``cc_type`` (feat, fix, docs...) when given; else ``docs`` / ``test`` when every path is
    one, ``code`` otherwise (and for a commit without files)."""
    if cc_type:
        return cc_type.lower()
    if paths and all(matching_glob(p, DOCS_PATHS) for p in paths):
        return "docs"
    if paths and all(matching_glob(p, TEST_PATHS) for p in paths):
        return "test"
    return "code"
