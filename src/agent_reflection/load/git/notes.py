"""Sidecars carried in git notes (``refs/notes/reflection``) into ``reflections``.

The post-commit hook attaches to a commit a note ``{"notes_version": 1, "sidecars": [...]}``
naming the sessions whose work the commit holds, with each session's reflection.v1 sidecar
inside. Notes travel with ``git push origin refs/notes/reflection``, so a team's sidecars reach
everyone through the remote they already share.

:func:`load_notes` reads them in two git processes whatever their number: one
``git notes --ref reflection list`` (note blob, annotated commit) and one ``git cat-file
--batch`` fed every note blob not read before. Each sidecar goes through the sidecar loader's
row function (:func:`agent_reflection.load.sidecars.rows.sidecar_row`: the same validation and
canonical encoding, hence the same content hash and idempotency) and the same insert; an invalid
one lands in ``rejected`` located at the note's commit. ``git_notes`` records every note read
(its blob and the sessions it names: the ``note`` link of ``session_commits``) and
``git_notes_tips`` the notes ref's commit: an unchanged tip is not read again.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agent_reflection.load.git.repo import GitSource, batch_objects, git
from agent_reflection.names import lone_surrogate
from agent_reflection.store.db import LoadSummary, begin_load, read_sql, transaction

if TYPE_CHECKING:
    import duckdb

    from agent_reflection.load.sidecars.rows import Reject

NOTES_REF = "refs/notes/reflection"
GIT_AI_REF = "refs/notes/ai"
WHOGITIT_REF = "refs/notes/whogitit"
#: Every notes ref a git load reads: git-ai's and whogitit's (:mod:`.ai_notes`), then the
#: reflection sidecars'. The git load peels them with its tips (``detail["notes_tips"]``).
NOTES_REFS = (GIT_AI_REF, WHOGITIT_REF, NOTES_REF)
NOTES_VERSION = 1
SOURCE = "notes"


@dataclass(frozen=True)
class Note:
    """One note: the commit it annotates, its blob id and its bytes."""

    commit: str
    blob: str
    data: bytes


def notes_tip(
    source: GitSource, ref: str = NOTES_REF, tips: Mapping[str, str] | None = None
) -> str | None:
    """The commit the notes ref points at, or None when the repository has no such notes.

    ``tips``: the notes refs' commits as already read (the git load's ``detail["notes_tips"]``:
    a ref it lacks is one the repository did not have), instead of asking git."""
    if tips is not None:
        return tips.get(ref)
    done = git(source.path, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    return done.stdout.decode().strip() or None if done.returncode == 0 else None


def list_notes(source: GitSource, ref: str = NOTES_REF) -> list[tuple[str, str]]:
    """(note blob, annotated commit) of every note under ``ref``."""
    done = git(source.path, "notes", "--ref", ref, "list", check=True)
    pairs = []
    for line in done.stdout.decode().splitlines():
        blob, _, commit = line.strip().partition(" ")
        if blob and commit:
            pairs.append((blob, commit))
    return pairs


def read_blobs(source: GitSource, blobs: list[str]) -> dict[str, bytes]:
    """The bytes of each blob, read by one ``git cat-file --batch`` (missing ones left out)."""
    if not blobs:
        return {}
    query = "".join(f"{b}\n" for b in blobs).encode()
    done = git(source.path, "cat-file", "--batch", input=query, check=True)
    return dict(batch_objects(done.stdout))


def note_sidecars(note: Note, repo: str) -> tuple[list[tuple[str, bytes]], list[Reject]]:
    """(location, JSON bytes) of each sidecar in the note, or why the note itself is unreadable.

    The location names the note's commit: ``refs/notes/reflection:<repo>@<sha>/sidecars/<i>``
    (a rejected sidecar's JSON path follows after ``#``).
    """
    from agent_reflection.load.sidecars.rows import Reject

    where = f"{NOTES_REF}:{repo}@{note.commit}"
    try:
        doc = json.loads(note.data)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        return [], [Reject(where, f"not a reflection note: invalid JSON ({exc})")]
    if not isinstance(doc, dict) or not isinstance(doc.get("sidecars"), list):
        return [], [
            Reject(
                where,
                'not a reflection note: want {"notes_version": 1, "sidecars": [...]} '
                "(another tool's note under refs/notes/reflection?)",
            )
        ]
    if doc.get("notes_version") != NOTES_VERSION:
        return [], [
            Reject(
                f"{where}#/notes_version",
                f"unsupported notes_version {doc.get('notes_version')!r}: this package reads "
                f"{NOTES_VERSION}; upgrade agent-reflection",
            )
        ]
    items: list[tuple[str, bytes]] = []
    rejects: list[Reject] = []
    for i, obj in enumerate(doc["sidecars"]):
        at = f"{where}/sidecars/{i}"
        bad = lone_surrogate(obj)
        if bad is not None:  # an escape like "\udce9": JSON, but not text
            rejects.append(Reject(f"{at}#{bad}", "not a sidecar: a lone surrogate escape here"))
            continue
        items.append((at, json.dumps(obj, ensure_ascii=False).encode("utf-8")))
    return items, rejects


def load_notes(
    con: duckdb.DuckDBPyConnection,
    source: GitSource,
    *,
    ref: str = NOTES_REF,
    tips: Mapping[str, str] | None = None,
) -> LoadSummary | None:
    """Load the sidecars in ``source``'s notes under ``ref``; None when it has no such notes
    (a repository without notes loads exactly as before). ``read`` counts sidecars. ``tips``:
    see :func:`notes_tip`."""
    tip = notes_tip(source, ref, tips)
    if tip is None:
        return None
    # the sidecar loader, its validation and the redactor: only for a repository with notes
    from agent_reflection.load.sidecars.loader import _Inserter
    from agent_reflection.load.sidecars.rows import (
        COLUMNS,
        RAW_PREFIX_BYTES,
        ChunkResult,
        Reject,
        sidecar_row,
    )
    from agent_reflection.redact import database_redactor

    session_column = COLUMNS.index("session_id")
    with begin_load(con, SOURCE, f"{source.origin} {ref}") as run:
        run.detail.update(repo=source.name, ref=ref, tip=tip)
        recorded = con.execute(
            read_sql("notes/tip.sql"), {"repo": source.name, "ref": ref}
        ).fetchone()
        if recorded is not None and recorded[0] == tip:
            run.detail.update(notes=0, notes_skipped="tip unchanged since the last load")
            return run.summary()
        known = {
            (row[0], row[1])
            for row in con.execute(read_sql("notes/known.sql"), {"repo": source.name}).fetchall()
        }
        pairs = list_notes(source, ref)
        # in commit-id order: of a session's sidecar in several notes, the first copy is stored
        fresh = sorted(
            ((blob, commit) for blob, commit in pairs if (commit, blob) not in known),
            key=lambda pair: pair[1],
        )
        blobs = read_blobs(source, sorted({blob for blob, _ in fresh}))
        run.detail.update(notes=len(pairs), notes_read=len(fresh))
        # the database's keyed redaction, as the sidecar file loader applies it: a sidecar read
        # from a note and from its file is one stored record, secrets replaced the same way
        redactor = database_redactor(con)
        with transaction(con):
            inserter = _Inserter(con, run)
            rows: list[tuple[Any, ...]] = []
            note_rows: list[tuple[str, str, list[str], int]] = []
            for blob, commit in fresh:
                data = blobs.get(blob)
                if data is None:
                    run.read += 1
                    run.reject(
                        f"{ref}:{source.name}@{commit}",
                        None,
                        f"note blob {blob} is missing: re-fetch {ref}",
                    )
                    continue
                note = Note(commit, blob, data)
                sidecars, problems = note_sidecars(note, source.name)
                for problem in problems:
                    run.read += 1
                    run.reject(
                        problem.location, redactor.bytes(data)[:RAW_PREFIX_BYTES], problem.reason
                    )
                sessions: list[str] = []
                for location, raw in sidecars:
                    run.read += 1
                    raw = redactor.bytes(raw)
                    row = sidecar_row(raw, location)
                    if isinstance(row, Reject):
                        run.reject(row.location, raw[:RAW_PREFIX_BYTES], row.reason)
                        continue
                    rows.append((*row, len(rows)))
                    sessions.append(row[session_column])
                note_rows.append((commit, blob, sorted(set(sessions)), len(sidecars)))
            if rows:
                columns = tuple(zip(*rows, strict=True))
                inserter.add(ChunkResult(columns, [], len(rows), 0))
            inserter.flush()
            if note_rows:
                shas, note_blobs, session_ids, counts = map(list, zip(*note_rows, strict=True))
                con.execute(
                    read_sql("notes/insert_notes.sql"),
                    {
                        "repo": source.name,
                        "shas": shas,
                        "note_blobs": note_blobs,
                        "session_ids": session_ids,
                        "sidecars": counts,
                        "load_id": run.load_id,
                    },
                )
            con.execute(
                read_sql("notes/save_tip.sql"),
                {"repo": source.name, "ref": ref, "sha": tip, "load_id": run.load_id},
            )
            run.checkpoint()
    return run.summary()
