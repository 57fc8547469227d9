"""The one writer of board tasks: bulk inserts through Arrow, idempotent by natural keys.

Per task (key ``task_ref``): absent -> inserted (``loaded``); present with the same
fingerprint -> nothing written (``already_present``); present with another fingerprint (the
task changed on the board since the last load) -> replaced, its events and links too
(``loaded``, counted again in ``detail["updated"]``). A ``task_ref`` repeated within one
load keeps its last record; the repeats count as already present.

Event-stream records (:class:`EventRecord`: one GitHub issue event or timeline item each) are
added to ``task_events`` (and their links to ``task_links``, their commits to
``task_commits``) with ``via`` naming the stream; a record whose event is already stored counts
as already present. Replacing a changed task deletes only its ``via = 'record'`` rows, so the
streams loaded beside it survive a re-load of the issue list.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb
import pyarrow as pa

from agent_reflection.load.board.model import EventRecord, Task
from agent_reflection.names import record_text
from agent_reflection.store.db import read_sql, registered

#: Tasks written per Arrow batch (bounds memory on very large exports).
BATCH = 5_000

_TS = pa.timestamp("us", tz="UTC")
TASK_SCHEMA = pa.schema(
    [
        ("task_ref", pa.string()),
        ("uuid", pa.string()),
        ("origin", pa.string()),
        ("source", pa.string()),
        ("category", pa.string()),
        ("updated_on", _TS),
        ("title", pa.string()),
        ("kind", pa.string()),
        ("project", pa.string()),
        ("created_at", _TS),
        ("completed_at", _TS),
        ("status", pa.string()),
        ("resolution", pa.string()),
        ("priority", pa.string()),
        ("labels", pa.list_(pa.string())),
        ("fingerprint", pa.string()),
        ("raw", pa.string()),
    ]
)
EVENT_SCHEMA = pa.schema(
    [
        ("task_ref", pa.string()),
        ("at", _TS),
        ("kind", pa.string()),
        ("detail", pa.string()),
        ("actor", pa.string()),
    ]
)
LINK_SCHEMA = pa.schema(
    [
        ("task_ref", pa.string()),
        ("target_ref", pa.string()),
        ("kind", pa.string()),
        ("direction", pa.string()),
        ("phrase", pa.string()),
    ]
)
COMMIT_SCHEMA = pa.schema([("task_ref", pa.string()), ("repo", pa.string()), ("sha", pa.string())])
STREAM_EVENT_SCHEMA = pa.schema([*EVENT_SCHEMA, ("via", pa.string())])
STREAM_LINK_SCHEMA = pa.schema([*LINK_SCHEMA, ("via", pa.string())])
#: task_commits.matched_by of commits a board record itself names (not found in a message).
EVENT_COMMIT_RULE = "github-event"


@dataclass(frozen=True)
class WriteResult:
    loaded: int
    updated: int
    already_present: int
    duplicates_in_load: int
    events_loaded: int
    links_loaded: int
    event_records: int = 0  # event-stream records read (each one event)
    event_records_loaded: int = 0  # of which added an event not stored before
    commits_linked: int = 0  # task_commits rows added from commit ids in the records


class TaskWriter:
    """Buffers tasks and writes them in Arrow batches of ``batch`` (bounded memory).

    Counting is per task_ref and load: its first record counts as loaded (new or changed) or
    already present (unchanged); every later record with the same task_ref counts as already
    present (``duplicates_in_load``) and, being later, replaces the stored one when it differs.
    """

    def __init__(self, con: duckdb.DuckDBPyConnection, load_id: int, batch: int = BATCH):
        self._con = con
        self._load_id = load_id
        self._batch = batch
        self._pending: dict[str, Task] = {}
        self._written: set[str] = set()
        self._new = self._updated = self._same = self._duplicates = 0
        self._events = self._links = 0
        self._stream: list[EventRecord] = []
        self._stream_read = self._stream_loaded = self._commits = 0

    def add_event(self, record: EventRecord) -> None:
        self._stream.append(record)
        self._stream_read += 1
        if len(self._stream) >= self._batch:
            self._flush_stream()

    def _flush_stream(self) -> None:
        if not self._stream:
            return
        batch, self._stream = self._stream, []
        loaded, commits = _write_stream(self._con, self._load_id, batch)
        self._stream_loaded += loaded
        self._commits += commits

    def add(self, task: Task) -> None:
        ref = task.task_ref
        if ref in self._pending or ref in self._written:
            self._duplicates += 1
            self._pending.pop(ref, None)
        self._pending[ref] = task
        if len(self._pending) >= self._batch:
            self.flush()

    def flush(self) -> None:
        if not self._pending:
            return
        batch = list(self._pending.values())
        self._pending.clear()
        states, events, links, commits = _write_batch(self._con, self._load_id, batch)
        self._commits += commits
        for ref, state in states:
            if ref in self._written:
                continue  # counted as a duplicate when it was added
            self._written.add(ref)
            if state == "new":
                self._new += 1
            elif state == "changed":
                self._updated += 1
            else:
                self._same += 1
        self._events += events
        self._links += links

    def result(self) -> WriteResult:
        self.flush()
        self._flush_stream()
        stream_same = self._stream_read - self._stream_loaded
        return WriteResult(
            self._new + self._updated + self._stream_loaded,
            self._updated,
            self._same + self._duplicates + stream_same,
            self._duplicates,
            self._events,
            self._links,
            self._stream_read,
            self._stream_loaded,
            self._commits,
        )


def _write_stream(
    con: duckdb.DuckDBPyConnection, load_id: int, batch: list[EventRecord]
) -> tuple[int, int]:
    """(events newly stored, commits newly linked) of a batch of event-stream records."""
    events = [{"task_ref": r.task_ref, **vars(r.event), "via": r.via} for r in batch]
    links = [{"task_ref": r.task_ref, **vars(r.link), "via": r.via} for r in batch if r.link]
    commits = [{"task_ref": r.task_ref, **vars(r.commit)} for r in batch if r.commit]
    with registered(
        con,
        board_stream_events=pa.Table.from_pylist(events, schema=STREAM_EVENT_SCHEMA),
        board_stream_links=pa.Table.from_pylist(links, schema=STREAM_LINK_SCHEMA),
        board_incoming_commits=pa.Table.from_pylist(commits, schema=COMMIT_SCHEMA),
    ):
        loaded = _count(con.execute(read_sql("board/insert_stream_events.sql"), [load_id]))
        con.execute(read_sql("board/insert_stream_links.sql"), [load_id])
        n_commits = _count(
            con.execute(read_sql("board/insert_record_commits.sql"), [EVENT_COMMIT_RULE, load_id])
        )
    return loaded, n_commits


def _write_batch(
    con: duckdb.DuckDBPyConnection, load_id: int, batch: list[Task]
) -> tuple[list[tuple[str, str]], int, int, int]:
    events = [{"task_ref": t.task_ref, **vars(e)} for t in batch for e in dict.fromkeys(t.events)]
    links = [{"task_ref": t.task_ref, **vars(x)} for t in batch for x in t.links]
    commits = [{"task_ref": t.task_ref, **vars(c)} for t in batch for c in t.commits]
    with registered(
        con,
        board_incoming=pa.Table.from_pydict(_task_columns(batch), schema=TASK_SCHEMA),
        board_incoming_events=pa.Table.from_pylist(events, schema=EVENT_SCHEMA),
        board_incoming_links=pa.Table.from_pylist(links, schema=LINK_SCHEMA),
        board_incoming_commits=pa.Table.from_pylist(commits, schema=COMMIT_SCHEMA),
    ):
        try:
            states = con.execute(read_sql("board/classify.sql")).fetchall()
            con.execute(read_sql("board/delete_changed.sql"))
            con.execute(read_sql("board/insert_tasks.sql"), [load_id])
            n_events = _count(con.execute(read_sql("board/insert_events.sql"), [load_id]))
            n_links = _count(con.execute(read_sql("board/insert_links.sql"), [load_id]))
            n_commits = _count(
                con.execute(
                    read_sql("board/insert_record_commits.sql"), [EVENT_COMMIT_RULE, load_id]
                )
            )
        finally:
            con.execute(read_sql("board/drop_touched.sql"))
    return [(str(r), str(s)) for r, s in states], n_events, n_links, n_commits


def _count(cursor: duckdb.DuckDBPyConnection) -> int:
    row = cursor.fetchone()
    return int(row[0]) if row else 0


def _task_columns(batch: list[Task]) -> dict[str, list[object]]:
    """The batch's columns: the task's fields :data:`TASK_SCHEMA` names (its last two columns
    are not fields: the fingerprint and the record's JSON)."""
    columns = {name: [getattr(t, name) for t in batch] for name in TASK_SCHEMA.names[:-2]}
    columns["origin"] = [record_text(v) for v in columns["origin"]]  # perhaps a file's name
    columns["fingerprint"] = [t.fingerprint() for t in batch]
    columns["raw"] = [t.raw_json for t in batch]
    return columns
