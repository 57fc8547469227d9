"""``reflect-post-commit-hook``: attach the sessions a commit contains to it as a git note.

Run by the ``post-commit`` hook ``reflect hook install --git`` puts in the repository's hooks
folder. After each commit it:

1. reads the commit's changed paths and their new blob ids (``git diff-tree``; a merge against
   its first parent);
2. reads the sidecars the Stop hook wrote for this work tree (``$REFLECTION_DIR``, else
   ``<root>/.reflection/sidecars``) that carry a ``git.uncommitted`` list, and keeps those with
   at least one ``{path, blob}`` the commit holds: the session's uncommitted work went into this
   commit (one sidecar per session: the newest that matches);
3. merges them by ``session_id`` into the commit's note in ``refs/notes/reflection``, one JSON
   object ``{"notes_version": 1, "sidecars": [<reflection.v1 record>, ...]}``.

With ``--rewrite`` (the ``post-rewrite`` hook, after ``commit --amend`` or ``rebase``) it reads
``<old> <new>`` lines on stdin and turns any note that git's ``notes.rewriteMode=concatenate``
left as several JSON objects on a new commit into one object again, merged by ``session_id``.

Never fails a commit: every fault is one line on stderr and exit status 0. Stdlib only (the
package's import-free hook modules), a few git calls: nothing runs when no sidecar matches.
"""

from __future__ import annotations

import os

from agent_reflection import config
from agent_reflection.hooks._entry import read_stdin, run_hook, warn
from agent_reflection.names import name_text

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from typing import Any, NoReturn

PROG = "reflect-post-commit-hook"
NOTES_REF = "refs/notes/reflection"
NOTES_VERSION = 1
#: Sidecar files larger than this are skipped (a sidecar is 1–60 kB).
MAX_SIDECAR_BYTES = 4 << 20
DEFAULT_SIDECAR_DIR = os.path.join(".reflection", "sidecars")
SIDECAR_SUFFIX = ".reflection.json"
_ZERO = frozenset("0")


def main(argv: Sequence[str] | None = None) -> NoReturn:
    """Console entry point. Ends the process with status 0; stdout stays empty."""
    run_hook(PROG, _body, argv, fault="internal error, no note written: ")


def _body(args: list[str]) -> None:
    if "--rewrite" in args:
        pairs = [line.split()[:2] for line in read_stdin(PROG).splitlines() if line.strip()]
        rewrite_notes(os.getcwd(), [p[1] for p in pairs if len(p) == 2])
        return
    attach_note(os.getcwd(), config.env_text(config.SIDECAR_DIR))


def attach_note(cwd: str, sidecar_dir: str | None = None) -> list[str]:
    """Note HEAD with the sessions whose uncommitted blobs it holds; their session ids."""
    from agent_reflection.hooks.gitstate import GitFailed, git

    try:
        lines = os.fsdecode(git(["rev-parse", "--show-toplevel", "HEAD"], cwd)).split("\n")
        root, head = lines[0], lines[1]
        changed = commit_blobs(git([*_DIFF_TREE, head], root))
    except (GitFailed, IndexError) as exc:
        warn(PROG, f"cannot read the new commit, no note written: {exc}")
        return []
    if not changed:
        return []
    files = _sidecar_files(_sidecar_folder(root, sidecar_dir))
    found = matching_sidecars(files, changed) if files else []
    if not found:
        return []
    try:
        existing = parse_note(_note_text(git, root, head))
        write_note(git, root, head, merge_sidecars(existing, found))
    except GitFailed as exc:
        warn(PROG, f"cannot write the note on {head[:12]}: {exc}")
        return []
    return sorted(str(s["session_id"]) for s in found)


#: The new commit's changed paths and blob ids: NUL-separated, no rename pairing, the first
#: commit against the empty tree, a merge against its first parent.
_DIFF_TREE = [
    "diff-tree",
    "-r",
    "-z",
    "--no-commit-id",
    "--no-renames",
    "--root",
    "-m",
    "--first-parent",
]


def commit_blobs(raw: bytes) -> dict[str, str]:
    """``{path: new blob id}`` from ``git diff-tree -r -z`` output (deleted paths left out),
    each path's text as a sidecar records it (a byte that is not UTF-8 reads U+FFFD,
    :func:`agent_reflection.names.name_text`)."""
    tokens = name_text(raw).split("\0")
    out: dict[str, str] = {}
    for i in range(0, len(tokens) - 1, 2):
        meta, path = tokens[i], tokens[i + 1]
        fields = meta.split(" ")
        if len(fields) >= 5 and meta.startswith(":"):
            blob = fields[3]
            if not _ZERO.issuperset(blob):
                out[path] = blob
    return out


def _sidecar_folder(root: str, configured: str | None) -> str:
    if configured:
        path = os.path.expanduser(configured)
        return os.path.normpath(path if os.path.isabs(path) else os.path.join(root, path))
    return os.path.join(root, DEFAULT_SIDECAR_DIR)


def _sidecar_files(folder: str) -> list[str]:
    """The sidecar files in ``folder`` (regular files only: no symlink is followed)."""
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return []
    return sorted(
        e.path
        for e in entries
        if e.name.endswith(SIDECAR_SUFFIX)
        and not e.name.startswith(".")
        and e.is_file(follow_symlinks=False)
    )


def matching_sidecars(paths: Iterable[str], changed: dict[str, str]) -> list[dict[str, Any]]:
    """Per session, the newest valid sidecar with an uncommitted ``{path, blob}`` in ``changed``."""
    import json

    from agent_reflection.errors import InvalidSidecar
    from agent_reflection.hooks.paths import read_regular  # with json: only when sidecars match
    from agent_reflection.reflection.checks import reflection_row

    best: dict[str, dict[str, Any]] = {}
    # A sidecar can match only if one of the commit's blob ids appears in its text: a byte
    # search skips parsing the others (for commits of a few files; a big one parses them all).
    needles = [blob.encode("ascii") for blob in changed.values()] if len(changed) <= 64 else []
    for path in paths:
        try:
            data = read_regular(path, MAX_SIDECAR_BYTES + 1)
        except OSError:
            continue
        if len(data) > MAX_SIDECAR_BYTES or b'"uncommitted"' not in data:
            continue  # too large; or written before git facts, or outside a work tree
        if needles and not any(needle in data for needle in needles):
            continue
        try:
            record = json.loads(data)
            reflection_row(record)
        except (ValueError, RecursionError, InvalidSidecar):
            continue  # the loader reports bad sidecars; a note carries valid ones only
        git = record.get("git")
        if not git or not any(
            u["blob"] is not None and changed.get(u["path"]) == u["blob"]
            for u in git["uncommitted"]
        ):
            continue
        session = record["session_id"]
        if session not in best or _newer(record, best[session]):
            best[session] = record
    return [best[s] for s in sorted(best)]


def _newer(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether record ``a`` was written after ``b`` (ISO-8601 UTC stamps; Z and +00:00 both)."""
    return _instant(a["timestamp"]) > _instant(b["timestamp"])


def _instant(stamp: str) -> str:
    return stamp.replace("+00:00", "Z").rstrip("\n")


# --- the note --------------------------------------------------------------------------------


def parse_note(text: str) -> list[dict[str, Any]]:
    """The sidecars of a note body: one JSON object, or several that a rewrite concatenated
    (blank-line separated). Parts that are not a ``notes_version`` 1 object are skipped."""
    import json

    try:
        parts = [json.loads(text)]
    except (ValueError, RecursionError):
        parts = []
        for chunk in text.split("\n\n"):
            if chunk.strip():
                try:
                    parts.append(json.loads(chunk))
                except (ValueError, RecursionError):
                    continue
    out: list[dict[str, Any]] = []
    for part in parts:
        if isinstance(part, dict) and part.get("notes_version") == NOTES_VERSION:
            sidecars = part.get("sidecars")
            if isinstance(sidecars, list):
                out.extend(s for s in sidecars if isinstance(s, dict) and "session_id" in s)
    return out


def merge_sidecars(
    old: Iterable[dict[str, Any]], new: Iterable[dict[str, Any]]
) -> list[dict[str, Any]]:
    """One sidecar per ``session_id``: the newest (a tie keeps the later given), sorted by id."""
    by_session: dict[str, dict[str, Any]] = {}
    for record in (*old, *new):
        key = str(record.get("session_id"))
        kept = by_session.get(key)
        try:
            older = kept is not None and _newer(kept, record)
        except (KeyError, TypeError, AttributeError):
            older = False
        if not older:
            by_session[key] = record
    return [by_session[k] for k in sorted(by_session)]


def note_body(sidecars: list[dict[str, Any]]) -> str:
    """The note text: one JSON object on one line (git's clean-up of note text leaves it be).
    Secrets are redacted (:func:`agent_reflection.redact.redact_unlinkable`): a note is pushed
    with the branch, and a sidecar may predate capture-time redaction or come from elsewhere."""
    import json

    from agent_reflection.redact import redact_unlinkable

    body = {"notes_version": NOTES_VERSION, "sidecars": redact_unlinkable(sidecars)}
    return json.dumps(body, ensure_ascii=False) + "\n"


def _note_text(git: Any, root: str, commit: str) -> str:
    """The text of ``commit``'s note; empty when it has none."""
    from agent_reflection.hooks.gitstate import GitFailed

    try:
        raw: bytes = git(["notes", f"--ref={NOTES_REF}", "show", commit], root)
    except GitFailed as exc:
        if exc.answered:  # no note yet
            return ""
        raise
    return raw.decode("utf-8", "replace")


def write_note(git: Any, root: str, commit: str, sidecars: list[dict[str, Any]]) -> None:
    """Replace ``commit``'s note with ``sidecars`` (given on git's stdin: a note can be larger
    than one command-line argument may be)."""
    body = note_body(sidecars).encode("utf-8")
    git(["notes", f"--ref={NOTES_REF}", "add", "-f", "-F", "-", commit], root, stdin=body)


def rewrite_notes(cwd: str, commits: Sequence[str]) -> int:
    """After a rewrite: make each of ``commits``' notes one JSON object again; how many."""
    from agent_reflection.hooks.gitstate import GitFailed, git

    try:
        root = os.fsdecode(git(["rev-parse", "--show-toplevel"], cwd)).strip()
    except GitFailed as exc:
        warn(PROG, f"not a work tree, notes left as they are: {exc}")
        return 0
    fixed = 0
    for commit in commits:
        try:
            text = _note_text(git, root, commit)
            sidecars = merge_sidecars((), parse_note(text))
            if sidecars and text != note_body(sidecars):
                write_note(git, root, commit, sidecars)
                fixed += 1
        except GitFailed as exc:
            warn(PROG, f"cannot rewrite the note on {commit[:12]}: {exc}")
    return fixed


if __name__ == "__main__":
    main()
